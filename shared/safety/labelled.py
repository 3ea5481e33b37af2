"""Provider keys with no prefix of their own, recognised by the provider named just before
them: `DATADOG_API_KEY=<40 characters>`, `"algolia": "<32>"`, `the Heroku API key is <uuid>`.
One table, provider -> label words and value shape, checked as one family.

The providers follow gitleaks' default configuration (read as facts: which providers issue
such keys and their length and alphabet); the patterns are written here. A row is gated by
its label words being among the text's words (one set intersection for the whole table), then
its pattern runs on the lower-case text: the label, up to 24 characters of key (`_API_KEY`,
` access token`), an operator (`=`, `:`, `:=`, `=>`, `,`, "is", "was"), an optional quote,
then the value, which must end there, hold a letter and a digit and not be filler. A key
naming an identifier rather than a secret (`HEROKU_APP_ID`, "cloudflare zone id", "sentry
release") passes, as do client ids, public keys and other values that are not secrets.

Known limits: the label must be a word of its own (`DATADOG_API_KEY`, not `datadogApiKey`;
the generic assignment rule still catches a camel-case key with a literal value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.safety.engine import Rule, RuleTable, Scan, is_filler, letters_and_digits

TABLE = RuleTable()

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

# rule id, what it is, labels (space-separated; "a_b" is "a" and "b" joined by _ - . space or
# nothing, gated by the word "a" or "ab"), the value (lower case, as the text it runs on)
# fmt: off
_LABELLED: tuple[tuple[str, str, str, str], ...] = (
    ("adafruit_api_key", "an Adafruit IO key", "adafruit", r"[a-z0-9_\-]{32}"),
    ("airtable_api_key", "an Airtable API key", "airtable", r"[a-z0-9]{17}"),
    ("algolia_api_key", "an Algolia API key", "algolia", r"[a-z0-9]{32}"),
    ("alibaba_access_key", "an Alibaba Cloud AccessKey secret", "alibaba", r"[a-z0-9]{30}"),
    ("asana_client_secret", "an Asana client secret", "asana", r"[a-z0-9]{32}"),
    ("atlassian_api_token", "an Atlassian API token", "atlassian confluence jira",
     r"[a-z0-9]{20}[0-9a-f]{4}"),
    ("beamer_api_token", "a Beamer API key", "beamer", r"b_[\w=\-]{44}"),
    ("bitbucket_client_secret", "a Bitbucket OAuth consumer secret", "bitbucket",
     r"[\w=\-]{64}"),
    ("bittrex_api_key", "a Bittrex API key or secret", "bittrex", r"[a-z0-9]{32}"),
    ("cloudflare_api_key", "a Cloudflare API token or key", "cloudflare",
     r"[\w\-]{40}|[0-9a-f]{37}"),
    ("codecov_token", "a Codecov token", "codecov", r"[a-z0-9]{32}"),
    ("coinbase_api_key", "a Coinbase access token", "coinbase", r"[\w\-]{64}"),
    ("confluent_api_key", "a Confluent API key or secret", "confluent",
     r"[a-z0-9]{64}|[a-z0-9]{16}"),
    ("contentful_token", "a Contentful API token", "contentful", r"[\w=\-]{43}"),
    ("datadog_api_key", "a Datadog API or application key", "datadog",
     r"[a-z0-9]{40}|[0-9a-f]{32}"),
    ("discord_client_secret", "a Discord client secret or key", "discord",
     r"[0-9a-f]{64}|[\w=\-]{32}"),
    ("droneci_token", "a Drone CI token", "droneci drone", r"[a-z0-9]{32}"),
    ("dropbox_token", "a Dropbox token or app secret", "dropbox",
     r"sl\.[\w=\-]{135,}|[a-z0-9]{11}a{10}[\w=\-]{43}|[a-z0-9]{15}"),
    ("etsy_token", "an Etsy API key", "etsy", r"[a-z0-9]{24}"),
    ("facebook_token", "a Facebook app secret or access token", "facebook",
     r"[0-9a-f]{32}|\d{15,16}(?:\||%7c)[\w\-]{27,40}"),
    ("fastly_api_key", "a Fastly API token", "fastly", r"[\w=\-]{32}"),
    ("finicity_api_key", "a Finicity API key or client secret", "finicity",
     r"[0-9a-f]{32}|[a-z0-9]{20}"),
    ("finnhub_token", "a Finnhub API key", "finnhub", r"[a-z0-9]{20}"),
    ("flickr_token", "a Flickr API key", "flickr", r"[a-z0-9]{32}"),
    ("freshbooks_token", "a FreshBooks token", "freshbooks", r"[a-z0-9]{64}"),
    ("gitter_token", "a Gitter token", "gitter", r"[\w\-]{40}"),
    ("gocardless_token", "a GoCardless access token", "gocardless", r"live_[\w=\-]{40}"),
    ("heroku_api_key", "a Heroku API key", "heroku", _UUID),
    ("hubspot_token", "a HubSpot API key", "hubspot", _UUID),
    ("intercom_token", "an Intercom access token", "intercom", r"[\w=\-]{60}"),
    ("jfrog_token", "a JFrog API key or identity token", "jfrog artifactory bintray xray",
     r"[a-z0-9]{73}|[a-z0-9]{64}"),
    ("kraken_api_key", "a Kraken API key", "kraken", r"[\w/=+\-]{80,90}"),
    ("kucoin_api_key", "a KuCoin API key or secret", "kucoin", rf"[0-9a-f]{{24}}|{_UUID}"),
    ("launchdarkly_token", "a LaunchDarkly access token", "launchdarkly", r"[\w=\-]{40}"),
    ("linear_api_key", "a Linear client secret", "linear", r"[0-9a-f]{32}"),
    ("linkedin_client_secret", "a LinkedIn client secret", "linked_in", r"[a-z0-9]{16}"),
    ("lob_api_key", "a Lob API key", "lob", r"(?:live|test)_[0-9a-f]{35}"),
    ("mailchimp_api_key", "a Mailchimp API key", "mailchimp", r"[0-9a-f]{32}-us\d{1,2}"),
    ("mapbox_token", "a Mapbox access token", "mapbox", r"[ps]k\.[a-z0-9]{60}\.[\w\-]{22}"),
    ("mattermost_token", "a Mattermost access token", "mattermost", r"[a-z0-9]{26}"),
    ("meraki_api_key", "a Cisco Meraki API key", "meraki", r"[0-9a-f]{40}"),
    ("messagebird_api_key", "a MessageBird API key", "message_bird", r"[a-z0-9]{25}"),
    ("netlify_token", "a Netlify access token", "netlify", r"[\w=\-]{40,46}"),
    ("nytimes_api_key", "a New York Times API key", "nytimes newyorktimes york_times",
     r"[\w=\-]{32}"),
    ("okta_token", "an Okta API token", "okta", r"00[\w=\-]{40}"),
    ("plaid_api_key", "a Plaid secret or access token", "plaid",
     rf"access-(?:sandbox|development|production)-{_UUID}|[a-z0-9]{{30}}"),
    ("privateai_api_key", "a Private AI API key", "private_ai", r"[a-z0-9]{32}"),
    ("rapidapi_key", "a RapidAPI key", "rapidapi", r"[\w\-]{50}"),
    ("sendbird_token", "a Sendbird API token", "sendbird", r"[0-9a-f]{40}"),
    ("sentry_token", "a Sentry auth token", "sentry", r"[0-9a-f]{64}"),
    ("sidekiq_secret", "a Sidekiq Enterprise or Pro credential", "contribsys",
     r"[0-9a-f]{8}:[0-9a-f]{8}"),
    ("snyk_token", "a Snyk API token", "snyk", _UUID),
    ("sonar_token", "a SonarQube token", "sonar sonarqube sonarcloud", r"[\w=\-]{40}"),
    ("sourcegraph_token", "a Sourcegraph access token", "sourcegraph", r"[0-9a-f]{40}"),
    ("squarespace_token", "a Squarespace API key", "squarespace", _UUID),
    ("sumologic_access_key", "a Sumo Logic access key", "sumo sumologic", r"[a-z0-9]{64}"),
    ("travis_ci_token", "a Travis CI token", "travis", r"[a-z0-9]{22}"),
    ("twitch_token", "a Twitch API token", "twitch", r"[a-z0-9]{30}"),
    ("twitter_token", "a Twitter API key, secret or access token", "twitter",
     r"[a-z0-9]{50}|[a-z0-9]{45}|[a-z0-9]{25}|\d{15,25}-[a-z0-9]{20,40}"),
    ("vault_token", "a HashiCorp Vault token", "vault", r"s\.[a-z0-9]{24}"),
    ("yandex_token", "a Yandex Cloud key or token", "yandex",
     r"t1\.[\w\-]+=*\.[\w\-]{86}=*|aqvn[\w\-]{35,38}|yc[\w\-]{38}"),
    ("zendesk_token", "a Zendesk API token", "zendesk", r"[a-z0-9]{40}"),
)
# fmt: on

# Words in the key that make the value an identifier or a setting, not a secret.
_NOT_SECRET_KEY = frozenset(
    """id ids name url uri user username email region site zone version release commit sha
    hash endpoint host domain project org team workspace channel public pub publishable""".split()
)
_SEPARATOR = r"[_\-. ]?"
_KEY = r"(?P<key>[\w.\- ]{0,24}?)"
_OPERATOR = r"[\"'`]?(?:\s+(?:is|was)\s+|\s*(?::=|=>|[:=,])\s*)[\"'`]?"
_KEY_WORD_RE = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class _Row:
    order: int
    rule: Rule
    pattern: re.Pattern[str]


def _build() -> tuple[list[_Row], dict[bytes, list[_Row]]]:
    rows: list[_Row] = []
    by_word: dict[bytes, list[_Row]] = {}
    for rule_id, reason, labels, value in _LABELLED:
        names = "|".join(
            _SEPARATOR.join(map(re.escape, label.split("_"))) for label in labels.split()
        )
        pattern = re.compile(rf"(?:{names}){_KEY}{_OPERATOR}(?P<value>{value})(?![\w\-])")
        row = _Row(len(rows), Rule(rule_id, reason), pattern)
        rows.append(row)
        for label in labels.split():
            parts = label.split("_")
            for word in dict.fromkeys((parts[0], "".join(parts))):  # private, privateai
                by_word.setdefault(word.encode(), []).append(row)
    return rows, by_word


_ROWS, _BY_WORD = _build()
_WORDS = frozenset(_BY_WORD)


def _secret_value(row: _Row, low: str, text: str) -> bool:
    search = row.pattern.search
    match = search(low)
    while match is not None:
        start = match.start()
        if not (start and low[start - 1].isalnum()) and not _NOT_SECRET_KEY.intersection(
            _KEY_WORD_RE.findall(match.group("key"))
        ):
            value = text[match.start("value") : match.end("value")]
            if letters_and_digits(value) and not is_filler(value):
                return True
        match = search(low, start + 1)
    return False


def _find(scan: Scan) -> Rule | None:
    """The first row (in table order) whose label names a secret value in the text."""
    hits = _WORDS & scan.words
    if not hits:
        return None
    rows = sorted({row for word in hits for row in _BY_WORD[word]}, key=lambda r: r.order)
    low, text = scan.low_ascii, scan.ascii
    for row in rows:
        if _secret_value(row, low, text):
            return row.rule
    return None


TABLE.family([row.rule for row in _ROWS], _find)
