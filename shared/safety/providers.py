"""Provider tokens recognised by their shape alone: a literal prefix and a body ("dop_v1_" and
64 hex digits), or a marker word inside the token (".atlasv1."). One table, provider -> shape,
checked as one family behind a cheap gate.

The list of providers follows gitleaks' default configuration (its rules read as facts:
which providers issue tokens, and what they look like); the patterns are written here. Tokens
whose prefix is a word followed by punctuation ("dop_v1_", "glsa_") are gated by that word
being among the text's words (one set intersection for the whole table); prefixes glued to
the body ("LTAI", "dapi") are looked for only where a long run of token characters starts
(`Scan.runs`); a marker row is gated by its word. Only then does a row's pattern run. A token
must not continue a word on its left or right, must not be filler, and must hold a letter and
a digit (a name like "API-GATEWAYCONFIGURATIONSERVICE" is not a key).

Providers whose keys have no prefix (a 32-character value named "DATADOG_API_KEY") are in
`labelled`; the older prefix rules (GitHub, Slack, Stripe, LLM providers ...) in `credentials`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.safety.engine import Rule, RuleTable, Scan, letters_and_digits, token_found

TABLE = RuleTable()

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_B64 = r"[A-Za-z0-9+/]"

# rule id, what it is, the prefixes (space-separated), the body after the prefix
# fmt: off
_PREFIXED: tuple[tuple[str, str, str, str], ...] = (
    # password managers, secret stores
    ("onepassword_secret", "a One Password account secret key", "A3-",
     r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}"),
    ("onepassword_secret", "a One Password service account token", "ops_eyJ",
     rf"{_B64}{{250,}}={{0,3}}"),
    ("doppler_token", "a Doppler token", "dp.pt. dp.st. dp.sa. dp.ct.", r"[A-Za-z0-9]{40,44}"),
    ("gitlab_token", "a GitLab session cookie", "_gitlab_session=", r"[0-9a-z]{32}"),
    # cloud, hosting, infrastructure
    ("alibaba_access_key", "an Alibaba Cloud AccessKey ID", "LTAI", r"[A-Za-z0-9]{20}"),
    ("cloudflare_api_key", "a Cloudflare Origin CA key", "v1.0-", r"[0-9a-f]{24}-[0-9a-f]{146}"),
    ("digitalocean_token", "a DigitalOcean token", "dop_v1_ doo_v1_ dor_v1_", r"[0-9a-f]{64}"),
    ("flyio_token", "a Fly.io token", "fo1_", r"[\w\-]{43}"),
    ("flyio_token", "a Fly.io token", "fm1a_ fm1r_ fm2_", rf"{_B64}{{100,}}={{0,3}}"),
    ("heroku_api_key", "a Heroku API key", "HRKU-AA", r"[\w\-]{58}"),
    ("openshift_token", "an OpenShift user token", "sha256~", r"[\w\-]{43}"),
    ("planetscale_token", "a PlanetScale token or password", "pscale_tkn_ pscale_oauth_ pscale_pw_",
     r"[\w=.\-]{32,64}"),
    ("pulumi_token", "a Pulumi access token", "pul-", r"[0-9a-f]{40}"),
    ("scalingo_token", "a Scalingo API token", "tk-us-", r"[\w\-]{48}"),
    ("defined_networking_token", "a Defined Networking API token", "dnkey-",
     r"[\w=\-]{26}-[\w=\-]{52}"),
    ("authress_access_key", "an Authress service client access key", "sc_ ext_ scauth_ authress_",
     r"[A-Za-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_\-][a-z0-9\-]{10,32}\.[\w+/=\-]{30,120}"),
    # data, analytics, observability
    ("clickhouse_api_key", "a ClickHouse Cloud API secret", "4b1d", r"[A-Za-z0-9]{38}"),
    ("databricks_token", "a Databricks API token", "dapi", r"[0-9a-f]{32}(?:-\d)?"),
    ("dynatrace_token", "a Dynatrace API token", "dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("grafana_token", "a Grafana API key", "eyJrIjoi", r"[A-Za-z0-9]{70,400}={0,3}"),
    ("grafana_token", "a Grafana Cloud token", "glc_", rf"{_B64}{{32,400}}={{0,3}}"),
    ("grafana_token", "a Grafana service account token", "glsa_",
     r"[A-Za-z0-9]{32}_[0-9a-fA-F]{8}"),
    ("newrelic_api_key", "a New Relic user API key", "NRAK-", r"[A-Za-z0-9]{27}"),
    ("newrelic_api_key", "a New Relic insert key", "NRII-", r"[\w\-]{32}"),
    ("sentry_token", "a Sentry user token", "sntryu_", r"[0-9a-f]{64}"),
    ("sentry_token", "a Sentry organization token", "sntrys_eyJ",
     rf"{_B64}{{60,}}={{0,2}}_{_B64}{{43}}"),
    # developer tools, CI, registries
    ("adobe_client_secret", "an Adobe client secret", "p8e-", r"[A-Za-z0-9]{32}"),
    ("airtable_api_key", "an Airtable personal access token", "pat",
     r"[A-Za-z0-9]{14}\.[0-9a-f]{64}"),
    ("clojars_token", "a Clojars deploy token", "CLOJARS_", r"[A-Za-z0-9]{60}"),
    ("frameio_token", "a Frame.io API token", "fio-u-", r"[\w=\-]{64}"),
    ("harness_token", "a Harness access token", "pat. sat.",
     r"[\w\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("hubspot_token", "a HubSpot private app token", "pat-", rf"(?:na|eu|ap)\d-{_UUID}"),
    ("infracost_token", "an Infracost API key", "ico-", r"[A-Za-z0-9]{32}"),
    ("jfrog_token", "a JFrog Artifactory API key", "AKCp", r"[A-Za-z0-9]{69}"),
    ("jfrog_token", "a JFrog Artifactory reference token", "cmVmd", r"[A-Za-z0-9]{59}"),
    ("linear_api_key", "a Linear API key", "lin_api_", r"[A-Za-z0-9]{40}"),
    ("notion_token", "a Notion integration token", "ntn_", r"\d{11}[A-Za-z0-9]{35}"),
    ("notion_token", "a Notion integration token", "secret_", r"[A-Za-z0-9]{43}"),
    ("octopus_api_key", "an Octopus Deploy API key", "API-", r"[A-Z0-9]{26}"),
    ("postman_api_key", "a Postman API key", "PMAK-", r"[0-9a-fA-F]{24}-[0-9a-fA-F]{34}"),
    ("prefect_api_key", "a Prefect API key", "pnu_", r"[A-Za-z0-9]{36}"),
    ("readme_api_key", "a ReadMe API key", "rdme_", r"[a-z0-9]{70}"),
    ("rubygems_api_key", "a RubyGems API key", "rubygems_", r"[0-9a-f]{48}"),
    ("settlemint_token", "a SettleMint access token", "sm_aat_ sm_pat_ sm_sat_",
     r"[A-Za-z0-9]{16}"),
    ("sonar_token", "a SonarQube token", "squ_ sqp_ sqa_", r"[0-9a-f]{40}"),
    ("sourcegraph_token", "a Sourcegraph access token", "sgp_",
     r"(?:(?:[0-9a-f]{16}|local)_)?[0-9a-f]{40}"),
    ("typeform_token", "a Typeform personal token", "tfp_", r"[\w.=\-]{59}"),
    ("intra42_client_secret", "an Intra (Forty-Two school) client secret", "s-s4t2ud- s-s4t2af-",
     r"[0-9a-f]{64}"),
    # payments, commerce, shipping
    ("duffel_token", "a Duffel API token", "duffel_test_ duffel_live_", r"[\w=\-]{43}"),
    ("easypost_api_key", "an EasyPost API key", "EZAK EZTK", r"[A-Za-z0-9]{54}"),
    ("flutterwave_secret_key", "a Flutterwave secret or encryption key", "FLWSECK_TEST- FLWSECK-",
     r"(?:[0-9a-h]{32}-X|[0-9a-h]{12})"),
    ("shippo_api_key", "a Shippo API key", "shippo_live_ shippo_test_", r"[0-9a-fA-F]{40}"),
    ("square_token", "a Square access token", "EAAA sq0atp-", r"[\w\-]{22,60}"),
    ("square_token", "a Square application secret", "sq0csp-", r"[\w\-]{43}"),
    # messaging, social
    ("brevo_api_key", "a Brevo (Sendinblue) API key", "xkeysib- xsmtpsib-",
     r"[0-9a-f]{64}-[A-Za-z0-9]{16}"),
    ("facebook_token", "a Facebook page access token", "EAAM EAAC", r"[A-Za-z0-9]{100,}"),
    ("twitter_token", "a Twitter bearer token", "A" * 22, r"[A-Za-z0-9%]{80,100}"),
)
# fmt: on

# rule id, what it is, a word always inside the token, the whole token
# fmt: off
_MARKED: tuple[tuple[str, str, str, str], ...] = (
    ("terraform_cloud_token", "a Terraform Cloud API token", "atlasv1",
     r"[A-Za-z0-9]{14}\.atlasv1\.[\w=\-]{60,70}"),
    ("maxmind_license_key", "a MaxMind license key", "mmk", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    ("teams_webhook", "a Microsoft Teams webhook URL", "webhookb2",
     rf"https://[\w\-]+\.webhook\.office\.com/webhookb2/{_UUID}@{_UUID}"
     rf"/IncomingWebhook/[A-Za-z0-9]{{32}}/{_UUID}"),
)
# fmt: on

_RIGHT = r"(?![\w\-])"  # the token ends here
_LEAD_RE = re.compile(r"[^A-Za-z0-9]*([A-Za-z0-9]+)[^A-Za-z0-9]")


@dataclass(frozen=True)
class _Shape:
    order: int
    rule: Rule
    pattern: re.Pattern[str]


def _build() -> tuple[list[_Shape], dict[bytes, list[_Shape]], dict[str, list[_Shape]]]:
    """The shapes in table order, by gating word (the word a prefix starts with, or a marker)
    and by glued prefix (a prefix with no punctuation to end its word)."""
    shapes: list[_Shape] = []
    by_word: dict[bytes, list[_Shape]] = {}
    by_glued: dict[str, list[_Shape]] = {}
    for rule_id, reason, prefixes, body in _PREFIXED:
        alternatives = "|".join(re.escape(p) for p in prefixes.split())
        pattern = re.compile(f"(?:{alternatives}){body}{_RIGHT}")
        shape = _Shape(len(shapes), Rule(rule_id, reason), pattern)
        shapes.append(shape)
        for prefix in prefixes.split():
            lead = _LEAD_RE.match(prefix)
            if lead:
                by_word.setdefault(lead.group(1).lower().encode(), []).append(shape)
            else:
                by_glued.setdefault(prefix, []).append(shape)
    for rule_id, reason, word, token in _MARKED:
        shape = _Shape(len(shapes), Rule(rule_id, reason), re.compile(token + _RIGHT))
        shapes.append(shape)
        by_word.setdefault(word.encode(), []).append(shape)
    return shapes, by_word, by_glued


_SHAPES, _BY_WORD, _BY_GLUED = _build()
_WORDS = frozenset(_BY_WORD)
_GLUED = tuple(_BY_GLUED)


def _find(scan: Scan) -> Rule | None:
    """The first row (in table order) whose token is in the text."""
    candidates: set[_Shape] = set()
    for word in _WORDS & scan.words:
        candidates.update(_BY_WORD[word])
    text = scan.ascii
    for start in scan.runs:
        if text.startswith(_GLUED, start):
            for prefix, shapes in _BY_GLUED.items():
                if text.startswith(prefix, start):
                    candidates.update(shapes)
    for shape in sorted(candidates, key=lambda s: s.order):
        if token_found(shape.pattern.search, text, text, valid=letters_and_digits):
            return shape.rule
    return None


TABLE.family([shape.rule for shape in _SHAPES], _find)
