"""The memory safety filter: whether a text may be written to memory by the assistant.

Every automated memory write (the inline memory tools, background extraction, curation) runs
its text through `check_text` or `ensure_safe` first; the operator's own edits do not.

The filter is deterministic: a verdict depends on the text alone (no randomness, clock,
network, environment or model), so the same text always gets the same verdict. It is pure:
it reads nothing, writes nothing and logs nothing. A refusal names a stable rule id and a
fixed description of the kind of thing found ("a GitHub token"); it never contains the text
or any part of it, so a refusal can be logged or shown to the model safely.

Rules, in the order they are tried (the first that matches is reported; `RULES` maps each id
to its description):

Credentials
    gcp_service_account_key, private_key_block, age_secret_key       key material
    aws_access_key, aws_secret_key, google_api_key, google_oauth_secret, azure_storage_key,
    azure_sas_token, azure_client_secret                             cloud providers
    github_token, gitlab_token, bitbucket_app_password, atlassian_api_token      code hosts
    slack_token, slack_webhook, discord_bot_token, discord_webhook, telegram_bot_token
    stripe_key, twilio_api_key, sendgrid_api_key, mailgun_api_key, shopify_token
    npm_token, pypi_token, docker_hub_token, vault_token
    anthropic_api_key, openrouter_api_key, openai_api_key (any sk- key of 32+ characters),
    huggingface_token, groq_api_key, xai_api_key, perplexity_api_key,
    replicate_api_token, cohere_api_key (no prefix: only next to "cohere"/"CO_API_KEY")
    every other provider of gitleaks' default rules, one id each (alibaba_access_key,
    databricks_token, datadog_api_key, digitalocean_token, sentry_token, ...: see RULES):
        by prefix or marker   a table of provider -> shape in `providers` ("dop_v1_" and 64
                              hex digits, ".atlasv1." inside); the prefix must start the token
        by label              a table in `labelled`: the provider named in the key before a
                              value of its shape (DATADOG_API_KEY=<32 hex>, "the heroku api
                              key is <uuid>"); keys naming an id, URL, region ... pass
    kubernetes_secret              base64 values under data: in a kind: Secret manifest
    jwt                            three base64url parts whose header is JSON with "alg"
                                   (also when wrapped in base64 again: "ZXlK...")
    connection_string_credentials  scheme://user:password@host
    authorization_header           Authorization: Bearer/Basic/Token <credential>
    password_assignment            a password, secret, token or API key given a literal value:
                                   KEY=value, "key": "value", KEY: value, export KEY=...,
                                   <add key="DbPassword" value="..."/>, mysql -p<password>,
                                   curl -u user:<password>; and in a sentence (`prose`):
                                   "my password is ...", "Password for prod db = ...",
                                   "log in with password ...", "sudo password ...",
                                   "passwd ...", "pw: ...", "... is the root password",
                                   "creds: admin / ...", "my PIN is 1234"
Sensitive personal data
    payment_card     13-19 digits (spaces or dashes allowed) passing Luhn (stdnum.luhn) with
                     the issuer prefix and length of a real card brand
    iban             upper-case, the country's length, passing mod-97 and the country's
                     format (stdnum.iban, whose SWIFT registry also gives the lengths)
    us_ssn           123-45-6789 outside the never-issued ranges (stdnum.us.ssn), or nine
                     digits near "SSN" / "social security number"
    national_id      near a context word (about 60 characters), validated by stdnum: UK
                     National Insurance number (format only: stdnum has none), UK NHS
                     number, Dutch BSN, German Steuer-ID, French NIR, Spanish DNI/NIE,
                     Italian codice fiscale, Indian Aadhaar, Canadian SIN, Brazilian CPF,
                     Polish PESEL, Swedish personnummer
    health_fact      a person (I, he, she, they, the user, my wife, a name ...) with a
                     diagnosis, condition, medication, provider, procedure, or "my <health
                     record>"; "the service handles diabetes data" passes; "allergic to"
                     counts whatever follows ("he's allergic to meetings" is blocked)
    financial_fact   a person's salary, income, rent, debt, savings, balance, credit score
                     with an amount, bankruptcy, eviction, arrears; "prices are $20/month"
                     and "the salary field is an integer" pass; "we"/"our" (a company) pass

Passes on purpose: preferences, code identifiers (`get_api_key()`, `password_hash`,
`SECRET_KEY_SETTING_NAME`), hashes, UUIDs, versions, dates, prices, ports, paths, ordinary
URLs, numbers failing their checksum, and placeholders. A placeholder is a token that is not
full length (`sk-...`), is visibly filler (`ghp_xxxx...`: fewer than five distinct
characters at its end, or EXAMPLE / xxxx / an ellipsis in it), a template or a variable
(`<your-api-key>`, `${DB_PASSWORD}`, `$TOKEN`, `{{ secrets.X }}`), a type (`password: str`)
or an expression (`password=os.environ["PW"]`, `api_key=api_key`). Test card numbers
(4242 4242 4242 4242) are blocked like any other valid card number.

Known limits: a secret with no known prefix and no telling key (a bare random string) passes,
as it cannot be told from a hash; an unquoted password in prose or code needs a digit, a
symbol or mixed case ("my password is sunshine" passes) unless its key is UPPER_CASE
(env-style: DB_PASSWORD=changeme is blocked), and one with no "is"/"="/":" before it
("with password ...") needs letters, a digit and a symbol or mixed case, so sentences about
passwords ("reset your password in settings", "use a password manager") pass, but so does
"with password hunter22"; an example password called "the ... password" is blocked; a
provider label must be a word of its own (`datadogApiKey=...` is caught by the generic
assignment rule instead); a password glued to a CLI flag is caught for mysql only; lower-case
IBANs pass; the health and financial rules are English keyword lists (paraphrases and other
languages pass); national ids other than SSNs need their context word; passport and
driving-licence numbers (no checksum) are not detected.

The token formats are written here for today's formats; detect-secrets is not used (no
release since 2024), and gitleaks' configuration is read as a list of providers and shapes,
not copied. Speed: each rule is gated cheaply (a literal prefix the regex engine skips to, a
substring, the set of words, the digit count), the two provider tables are one check each
(one set intersection with the text's words, and a look at the few places where a long run
of token characters starts), ASCII-only patterns run on an ASCII copy of the text, numbers
and IBANs are found by their shape ("0000", "AA00" in a copy with digits as 0 and letters as
A/a), and the fact and prose rules run in windows around their anchor words, on the
lower-case text. bench/bench_filter.py measures about 0.2 ms per 1.2 KB chat text on a
2-core machine.

The package: `engine` (the scanned text, the rule table, the token-rule builder), then one
module per area, in check order: `credentials` (token formats), `providers` (the provider
-> prefix table), `labelled` (the provider -> label table), `configs` (curl -u, XML settings,
Kubernetes Secrets), `assignments` (JWT, connection strings, authorization headers,
password/secret values), `prose` (passwords in sentences), `personal` (cards, IBANs, SSNs,
national ids) and `facts` (health and financial facts).

Imports only shared.core.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.core.errors import InvalidInput
from shared.safety import (
    assignments,
    configs,
    credentials,
    facts,
    labelled,
    personal,
    prose,
    providers,
)
from shared.safety.engine import Check, Rule, Scan, normalize

__all__ = ["RULES", "SafetyError", "Verdict", "check_text", "ensure_safe"]

_AREAS = (credentials, providers, labelled, configs, assignments, prose, personal, facts)
_CHECKS: tuple[Check, ...] = tuple(check for area in _AREAS for check in area.TABLE.checks)
RULES: dict[str, str] = {}  # rule id -> what it finds, in check order
for _area in _AREAS:
    for _rule in _area.TABLE.rules:
        RULES.setdefault(_rule.id, _rule.reason)


@dataclass(frozen=True)
class Verdict:
    """The filter's answer. `rule` and `reason` are None when the text is allowed."""

    allowed: bool
    rule: str | None = None
    reason: str | None = None


ALLOWED = Verdict(True)


class SafetyError(InvalidInput):
    """A write refused by the filter. The message names the rule, never the text."""

    code = "blocked_by_filter"

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(
            f"blocked by the safety filter (rule {verdict.rule}): the text contains "
            f"{verdict.reason}; leave it out"
        )
        self.rule = verdict.rule
        self.reason = verdict.reason


def check_text(text: str) -> Verdict:
    """The verdict for `text`: allowed, or the first rule (in table order) that blocks it."""
    if not isinstance(text, str):
        raise TypeError("check_text takes a str")
    if not text:
        return ALLOWED
    scan = Scan(normalize(text))
    for rule, check in _CHECKS:
        found = check(scan)
        if found:
            hit = rule if rule is not None else found
            assert isinstance(hit, Rule)
            return Verdict(False, hit.id, hit.reason)
    return ALLOWED


def ensure_safe(text: str) -> None:
    """Raise SafetyError if `text` may not be written to memory."""
    verdict = check_text(text)
    if not verdict.allowed:
        raise SafetyError(verdict)
