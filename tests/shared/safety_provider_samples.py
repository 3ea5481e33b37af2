"""Format-valid, generated samples of every provider token shape the safety filter knows
beyond the original corpus (the providers of gitleaks' default configuration): one sample per
shape, as (text, rule, secret), with the secret the random part.

Prefixes and labels are literals; bodies are random from a fixed-seed generator made at import
time, so the repository holds no string that looks like a live key. None is a real secret.
"""

from __future__ import annotations

import base64
import json
import random
import string

_rng = random.Random(20250815)
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
DIGITS = string.digits


def rnd(n: int, alphabet: str = ALNUM) -> str:
    """Random text; from an alphabet of letters and digits, one holding both (as every real
    token does)."""
    mixed = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if (
            not mixed
            or n < 8
            or any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value)
        ):
            return value


def uuid4() -> str:
    return f"{rnd(8, HEX)}-{rnd(4, HEX)}-4{rnd(3, HEX)}-a{rnd(3, HEX)}-{rnd(12, HEX)}"


SAMPLES: list[tuple[str, str, str]] = []


def sample(text: str, rule: str, secret: str) -> None:
    SAMPLES.append((text, rule, secret))


def prefixed(template: str, rule: str, prefix: str, body: str) -> None:
    """A token `prefix + body` placed in `template` at {}; the body is the secret."""
    sample(template.format(prefix + body), rule, body)


# --- tokens recognised by their prefix ---------------------------------------------------------

_s = "-".join(rnd(n, UPPER_ALNUM) for n in (6, 11, 5, 5, 5))
prefixed("1Password secret key: {}", "onepassword_secret", "A3-", _s)
_account = {"signInAddress": "my.1password.com", "userAuth": {"method": "SRPg-4096"}}
_account["email"] = rnd(20, string.ascii_lowercase) + "@1passwordserviceaccounts.com"
_account["srpX"] = rnd(64, HEX)
_account["muk"] = {"alg": "A256GCM", "k": rnd(43, URLSAFE), "kid": rnd(26, LOWER_ALNUM)}
_ops = base64.b64encode(json.dumps(_account).encode()).decode().rstrip("=")
prefixed("OP_SERVICE_ACCOUNT_TOKEN={}", "onepassword_secret", "ops_", _ops)
prefixed("doppler service token {}", "doppler_token", "dp.st.", rnd(43))
prefixed("cookie: {}", "gitlab_token", "_gitlab_session=", rnd(32, LOWER_ALNUM))
prefixed("Alibaba access key id {}", "alibaba_access_key", "LTAI", rnd(20))
prefixed("origin CA key {}", "cloudflare_api_key", "v1.0-", f"{rnd(24, HEX)}-{rnd(146, HEX)}")
prefixed("DIGITALOCEAN_TOKEN={}", "digitalocean_token", "dop_v1_", rnd(64, HEX))
prefixed("fly deploy token {}", "flyio_token", "fo1_", rnd(43, URLSAFE))
prefixed("FLY_API_TOKEN={}", "flyio_token", "fm2_", rnd(150, B64))
prefixed("heroku key {}", "heroku_api_key", "HRKU-AA", rnd(58, URLSAFE))
prefixed("oc login --token={}", "openshift_token", "sha256~", rnd(43, URLSAFE))
prefixed("planetscale password {}", "planetscale_token", "pscale_pw_", rnd(43, URLSAFE))
prefixed("PULUMI_ACCESS_TOKEN={}", "pulumi_token", "pul-", rnd(40, HEX))
prefixed("scalingo token {}", "scalingo_token", "tk-us-", rnd(48, URLSAFE))
prefixed("dnclient key {}", "defined_networking_token", "dnkey-", f"{rnd(26)}-{rnd(52)}")
prefixed(
    "authress key {}",
    "authress_access_key",
    "sc_",
    f"{rnd(12)}.{rnd(5, LOWER_ALNUM)}.acc_{rnd(20, LOWER_ALNUM)}.{rnd(64, B64)}",
)
prefixed("clickhouse secret {}", "clickhouse_api_key", "4b1d", rnd(38))
prefixed("DATABRICKS_TOKEN={}", "databricks_token", "dapi", rnd(32, HEX))
prefixed("dynatrace {}", "dynatrace_token", "dt0c01.", f"{rnd(24, UPPER_ALNUM)}.{rnd(64)}")
prefixed("grafana api key {}", "grafana_token", "eyJrIjoi", rnd(90))
prefixed("GRAFANA_CLOUD_TOKEN={}", "grafana_token", "glc_", rnd(80, B64) + "=")
prefixed("grafana service account {}", "grafana_token", "glsa_", f"{rnd(32)}_{rnd(8, HEX)}")
prefixed("NEW_RELIC_API_KEY={}", "newrelic_api_key", "NRAK-", rnd(27, UPPER_ALNUM))
prefixed("insert key {}", "newrelic_api_key", "NRII-", rnd(32, URLSAFE))
prefixed("SENTRY_AUTH_TOKEN={}", "sentry_token", "sntryu_", rnd(64, HEX))
_claims = {"iat": 1735689600, "url": "https://sentry.io", "region_url": "https://us.sentry.io"}
_org = base64.b64encode(json.dumps(_claims).encode()).decode().rstrip("=")
prefixed("sentry org token {}", "sentry_token", "sntrys_", f"{_org}_{rnd(43, B64)}")
prefixed("adobe client secret {}", "adobe_client_secret", "p8e-", rnd(32))
prefixed("AIRTABLE_TOKEN={}", "airtable_api_key", "pat", f"{rnd(14)}.{rnd(64, HEX)}")
prefixed("clojars deploy token {}", "clojars_token", "CLOJARS_", rnd(60))
prefixed("frame.io token {}", "frameio_token", "fio-u-", rnd(64, URLSAFE))
prefixed("harness token {}", "harness_token", "pat.", f"{rnd(22, URLSAFE)}.{rnd(24)}.{rnd(20)}")
prefixed("HUBSPOT_ACCESS_TOKEN={}", "hubspot_token", "pat-na1-", uuid4())
prefixed("INFRACOST_API_KEY={}", "infracost_token", "ico-", rnd(32))
prefixed("artifactory api key {}", "jfrog_token", "AKCp", rnd(69))
prefixed("artifactory reference token {}", "jfrog_token", "cmVmd", rnd(59))
prefixed("LINEAR_API_KEY={}", "linear_api_key", "lin_api_", rnd(40))
prefixed("notion token {}", "notion_token", "ntn_", rnd(11, DIGITS) + rnd(35))
prefixed("NOTION_TOKEN={}", "notion_token", "secret_", rnd(43))
prefixed("octopus key {}", "octopus_api_key", "API-", rnd(26, UPPER_ALNUM))
prefixed("postman key {}", "postman_api_key", "PMAK-", f"{rnd(24, HEX)}-{rnd(34, HEX)}")
prefixed("PREFECT_API_KEY={}", "prefect_api_key", "pnu_", rnd(36))
prefixed("readme key {}", "readme_api_key", "rdme_", rnd(70, LOWER_ALNUM))
prefixed("GEM_HOST_API_KEY={}", "rubygems_api_key", "rubygems_", rnd(48, HEX))
prefixed("settlemint token {}", "settlemint_token", "sm_pat_", rnd(16))
prefixed("SONAR_TOKEN={}", "sonar_token", "squ_", rnd(40, HEX))
prefixed("src access token {}", "sourcegraph_token", "sgp_", f"{rnd(16, HEX)}_{rnd(40, HEX)}")
prefixed("typeform token {}", "typeform_token", "tfp_", rnd(59, URLSAFE))
prefixed("intra client secret {}", "intra42_client_secret", "s-s4t2ud-", rnd(64, HEX))
prefixed("DUFFEL_TOKEN={}", "duffel_token", "duffel_test_", rnd(43, URLSAFE))
prefixed("easypost key {}", "easypost_api_key", "EZAK", rnd(54))
prefixed(
    "flutterwave {}-X", "flutterwave_secret_key", "FLWSECK_TEST-", rnd(32, "0123456789abcdefgh")
)
prefixed("SHIPPO_API_KEY={}", "shippo_api_key", "shippo_live_", rnd(40, HEX))
prefixed("square access token {}", "square_token", "EAAA", rnd(60, URLSAFE))
prefixed("square application secret {}", "square_token", "sq0csp-", rnd(43, URLSAFE))
prefixed("BREVO_API_KEY={}", "brevo_api_key", "xkeysib-", f"{rnd(64, HEX)}-{rnd(16)}")
prefixed("page access token {}", "facebook_token", "EAAC", rnd(160))
prefixed("TWITTER_BEARER_TOKEN={}", "twitter_token", "A" * 22, rnd(90))

# --- tokens recognised by a marker inside them --------------------------------------------------

_t = f"{rnd(14)}.atlasv1.{rnd(67, URLSAFE)}"
sample(f"TF_TOKEN_app_terraform_io={_t}", "terraform_cloud_token", _t)
_t = f"{rnd(6)}_{rnd(29)}_mmk"
sample(f"MAXMIND_LICENSE_KEY={_t}", "maxmind_license_key", _t[:-4])
_t = rnd(32)
sample(
    f"post to https://eonyx.webhook.office.com/webhookb2/{uuid4()}@{uuid4()}"
    f"/IncomingWebhook/{_t}/{uuid4()}",
    "teams_webhook",
    _t,
)

# --- keys named by their provider ---------------------------------------------------------------


def labelled(template: str, rule: str, value: str) -> None:
    sample(template.format(value), rule, value)


labelled("ADAFRUIT_IO_KEY={}", "adafruit_api_key", rnd(32, LOWER_ALNUM + "_"))
labelled('"airtable_api_key": "{}"', "airtable_api_key", rnd(17))
labelled("ALGOLIA_ADMIN_KEY={}", "algolia_api_key", rnd(32, LOWER_ALNUM))
labelled("alibaba access key secret = {}", "alibaba_access_key", rnd(30))
labelled("ASANA_CLIENT_SECRET={}", "asana_client_secret", rnd(32, LOWER_ALNUM))
labelled("JIRA_API_TOKEN={}", "atlassian_api_token", rnd(20) + rnd(4, HEX))
labelled("beamer key: {}", "beamer_api_token", "b_" + rnd(44, URLSAFE))
labelled("BITBUCKET_CLIENT_SECRET={}", "bitbucket_client_secret", rnd(64, URLSAFE))
labelled("bittrex api secret: {}", "bittrex_api_key", rnd(32))
labelled("CLOUDFLARE_API_TOKEN={}", "cloudflare_api_key", rnd(40, URLSAFE))
labelled("cloudflare global api key is {}", "cloudflare_api_key", rnd(37, HEX))
labelled("CODECOV_TOKEN={}", "codecov_token", rnd(32, LOWER_ALNUM))
labelled("coinbase access token: {}", "coinbase_api_key", rnd(64, URLSAFE))
labelled("CONFLUENT_API_SECRET={}", "confluent_api_key", rnd(64))
labelled("contentful delivery token = {}", "contentful_token", rnd(43, URLSAFE))
labelled("DATADOG_API_KEY={}", "datadog_api_key", rnd(32, HEX))
labelled("DISCORD_CLIENT_SECRET={}", "discord_client_secret", rnd(32, URLSAFE))
labelled("DRONE_TOKEN={}", "droneci_token", rnd(32))
labelled("dropbox token: {}", "dropbox_token", "sl." + rnd(140, URLSAFE))
labelled("DROPBOX_ACCESS_TOKEN={}", "dropbox_token", rnd(11) + "A" * 10 + rnd(43, URLSAFE))
labelled("dropbox app secret = {}", "dropbox_token", rnd(15, LOWER_ALNUM))
labelled("ETSY_API_KEY={}", "etsy_token", rnd(24, LOWER_ALNUM))
labelled("FACEBOOK_APP_SECRET={}", "facebook_token", rnd(32, HEX))
labelled("facebook access token: {}", "facebook_token", rnd(16, DIGITS) + "|" + rnd(32, URLSAFE))
labelled("FASTLY_API_TOKEN={}", "fastly_api_key", rnd(32, URLSAFE))
labelled("finicity app key = {}", "finicity_api_key", rnd(32, HEX))
labelled("FINNHUB_API_KEY={}", "finnhub_token", rnd(20, LOWER_ALNUM))
labelled("flickr api key: {}", "flickr_token", rnd(32, LOWER_ALNUM))
labelled("FRESHBOOKS_TOKEN={}", "freshbooks_token", rnd(64, LOWER_ALNUM))
labelled("GITTER_TOKEN={}", "gitter_token", rnd(40, LOWER_ALNUM))
labelled("gocardless access token: {}", "gocardless_token", "live_" + rnd(40, URLSAFE))
labelled("HEROKU_API_KEY={}", "heroku_api_key", uuid4())
labelled("the hubspot api key is {}", "hubspot_token", uuid4())
labelled("INTERCOM_ACCESS_TOKEN={}", "intercom_token", rnd(60, URLSAFE))
labelled("ARTIFACTORY_API_KEY={}", "jfrog_token", rnd(73))
labelled("KRAKEN_PRIVATE_KEY={}", "kraken_api_key", rnd(86, B64) + "==")
labelled("kucoin api secret: {}", "kucoin_api_key", uuid4())
labelled("LAUNCHDARKLY_ACCESS_TOKEN={}", "launchdarkly_token", rnd(40, URLSAFE))
labelled("LINEAR_CLIENT_SECRET={}", "linear_api_key", rnd(32, HEX))
labelled("linkedin client secret: {}", "linkedin_client_secret", rnd(16))
labelled("LOB_API_KEY={}", "lob_api_key", "live_" + rnd(35, HEX))
labelled("MAILCHIMP_API_KEY={}", "mailchimp_api_key", rnd(32, HEX) + "-us21")
labelled("MAPBOX_ACCESS_TOKEN={}", "mapbox_token", "sk." + rnd(60) + "." + rnd(22, URLSAFE))
labelled("mattermost token: {}", "mattermost_token", rnd(26, LOWER_ALNUM))
labelled("MERAKI_DASHBOARD_API_KEY={}", "meraki_api_key", rnd(40, HEX))
labelled("MESSAGEBIRD_ACCESS_KEY={}", "messagebird_api_key", rnd(25))
labelled("NETLIFY_AUTH_TOKEN={}", "netlify_token", rnd(43, URLSAFE))
labelled("NYTIMES_API_KEY={}", "nytimes_api_key", rnd(32))
labelled("OKTA_API_TOKEN={}", "okta_token", "00" + rnd(40, URLSAFE))
_t = uuid4()
sample(f"plaid access token: access-sandbox-{_t}", "plaid_api_key", _t)
labelled("PLAID_SECRET={}", "plaid_api_key", rnd(30, LOWER_ALNUM))
labelled("PRIVATE_AI_API_KEY={}", "privateai_api_key", rnd(32, LOWER_ALNUM))
labelled("x-rapidapi-key: {}", "rapidapi_key", rnd(50))
labelled("SENDBIRD_API_TOKEN={}", "sendbird_token", rnd(40, HEX))
labelled("sentry auth token: {}", "sentry_token", rnd(64, HEX))
labelled("BUNDLE_GEMS__CONTRIBSYS__COM={}", "sidekiq_secret", rnd(8, HEX) + ":" + rnd(8, HEX))
labelled("SNYK_TOKEN={}", "snyk_token", uuid4())
labelled("sonar.login={}", "sonar_token", rnd(40, LOWER_ALNUM))
labelled("SOURCEGRAPH_ACCESS_TOKEN={}", "sourcegraph_token", rnd(40, HEX))
labelled("squarespace api key: {}", "squarespace_token", uuid4())
labelled("SUMO_ACCESS_KEY={}", "sumologic_access_key", rnd(64))
labelled("TRAVIS_API_TOKEN={}", "travis_ci_token", rnd(22))
labelled("TWITCH_CLIENT_SECRET={}", "twitch_token", rnd(30, LOWER_ALNUM))
labelled("TWITTER_API_SECRET={}", "twitter_token", rnd(50))
labelled("twitter access token: {}", "twitter_token", rnd(19, DIGITS) + "-" + rnd(30))
labelled("VAULT_TOKEN=s.{}", "vault_token", rnd(24))
labelled("yandex api key: {}", "yandex_token", "AQVN" + rnd(36, URLSAFE))
labelled("yandex static key: {}", "yandex_token", "YC" + rnd(38, URLSAFE))
labelled("ZENDESK_API_TOKEN={}", "zendesk_token", rnd(40))

# --- shapes of providers the original rules cover, not in the original corpus ------------------

prefixed("anthropic admin key {}", "anthropic_api_key", "sk-ant-admin01-", rnd(93, URLSAFE) + "AA")
for _prefix in ("glcbt-64_", "glffct-", "glft-", "glimt-", "glsoat-", "glptt-"):
    prefixed("gitlab token {}", "gitlab_token", _prefix, rnd(40, HEX))
prefixed("gitlab agent token {}", "gitlab_token", "glagent-", rnd(50, URLSAFE))
prefixed("registration token {}", "gitlab_token", "GR1348941", rnd(20, URLSAFE))
prefixed("vault batch token {}", "vault_token", "hvb.", rnd(140, URLSAFE))
prefixed("slack config refresh token {}", "slack_token", "xoxe-1-", rnd(146, UPPER_ALNUM))

# --- gitleaks' rules for configuration formats and command lines -------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


_header = _b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
_claims = _b64url(json.dumps({"sub": "svc-export", "exp": 1767225600}).encode())
_t = base64.b64encode(f"{_header}.{_claims}.{rnd(86, URLSAFE)}".encode()).decode()
sample(f"X-Forwarded-Token: {_t}", "jwt", _t)
_t = rnd(14)
sample(f"curl -u deploy:{_t} https://ci.internal/api/json", "password_assignment", _t)
_t = rnd(18)
sample(
    f'<packageSourceCredentials><feed><add key="ClearTextPassword" value="{_t}" />',
    "password_assignment",
    _t,
)
_t = base64.b64encode(rnd(20).encode()).decode()
sample(
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\n"
    f"data:\n  username: ZXhwb3J0ZXI=\n  api-token: {_t}\n",
    "kubernetes_secret",
    _t,
)
_t = rnd(29)
sample(f"'secret_key' => 'sk_{_t}',", "password_assignment", _t)
