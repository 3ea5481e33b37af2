"""Accounts: users, passwords and tokens (`people`), groups (`groups`), invites (`invites`),
the login throttle (`throttle`), the token cache (`token_cache`), storage quotas (`storage`)
and the settings an administrator changes at run time (`live_settings`).

Nothing is imported here, so that importing a module of the package runs no other.
"""
