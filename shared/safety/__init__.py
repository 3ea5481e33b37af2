"""The memory safety filter: `checks` gives the verdicts (`check_text`, `ensure_safe`,
`ensure_safe_entries`); `engine` and one module per area hold the rules (docs/safety.md).

Nothing is imported here, so that importing a module of the package runs no other.
"""
