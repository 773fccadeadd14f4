"""The credential check: what it finds, where, what it leaves alone, and how it masks.

Every credential-shaped value is built at run time from a fixed seed (`synthetic`), so
no real key and no literal that a secret scanner would flag lives in the repository.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import pathlib
import string
from collections.abc import Iterator
from re import _constants as sre  # the parser's opcodes, to read the rules' structure
from re import _parser as sre_parse
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.privacy import (
    CredentialFinding,
    CredentialKind,
    CredentialMode,
    find_credentials,
    mask_credentials,
    rules,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "ordinary_queries.txt"
DOC = ROOT / "docs" / "credential-check.md"

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
B32 = string.ascii_uppercase + "234567"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
K = CredentialKind


def synthetic(alphabet: str, length: int, seed: str) -> str:
    """A fixed pseudo-random string over `alphabet`, the same on every run."""
    stream = hashlib.shake_256(seed.encode()).digest(length)
    return "".join(alphabet[byte % len(alphabet)] for byte in stream)


def b64url_json(value: object) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def pem_block(label: str, seed: str, *, line_break: str = "\n") -> str:
    body = synthetic(B64, 320, seed)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return line_break.join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def jwt(seed: str) -> str:
    header = b64url_json({"alg": "HS256", "typ": "JWT"})
    payload = b64url_json({"sub": synthetic(string.digits, 10, seed), "iat": 1_700_000_000})
    return f"{header}.{payload}.{synthetic(B64URL, 43, seed + '-sig')}"


def discord_bot_token(seed: str) -> str:
    user_id = "1" + synthetic(string.digits, 17, seed)
    encoded_id = base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")
    return f"{encoded_id}.{synthetic(B64URL, 6, seed + 't')}.{synthetic(B64URL, 38, seed + 'h')}"


def b64_json(value: object) -> str:
    return base64.b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()


def putty_key_file(seed: str) -> tuple[str, str]:
    """A PuTTY (PPK version 3) key file and its private part, from `Private-Lines:` on."""
    public = synthetic(B64, 68, seed + " public")
    private = synthetic(B64, 64, seed + " private") + "\n" + synthetic(B64, 24, seed + " end")
    private_part = f"Private-Lines: 2\n{private}"
    head = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\n"
        f"Public-Lines: 2\n{public[:64]}\n{public[64:]}\n"
    )
    return head + private_part + f"\nPrivate-MAC: {synthetic(HEX, 64, seed + ' mac')}", private_part


def openai_key(kind: str, seed: str) -> str:
    """The documented shape: a type, 74 characters, the marker T3BlbkFJ, 74 characters."""
    return f"sk-{kind}-{synthetic(B64URL, 74, seed)}T3BlbkFJ{synthetic(B64URL, 74, seed + ' tail')}"


@dataclasses.dataclass(frozen=True)
class Case:
    """A text `before + value + after` whose one credential is `value`."""

    kind: CredentialKind
    before: str
    value: str
    after: str = ""

    @property
    def text(self) -> str:
        return self.before + self.value + self.after

    @property
    def expected(self) -> CredentialFinding:
        return CredentialFinding(self.kind, len(self.before), len(self.value))


# One realistic case per kind, in the context an agent would paste it.
KIND_CASES: dict[CredentialKind, Case] = {
    K.AWS_ACCESS_KEY_ID: Case(
        K.AWS_ACCESS_KEY_ID,
        "why does aws s3 ls fail with key ",
        "AKIA" + synthetic(B32, 16, "aws"),
        " in eu-west-1",
    ),
    K.AWS_SECRET_ACCESS_KEY: Case(
        K.AWS_SECRET_ACCESS_KEY,
        "[default]\naws_secret_access_key = ",
        synthetic(B64, 40, "aws secret"),
        "\nregion = us-east-1",
    ),
    K.GCP_API_KEY: Case(
        K.GCP_API_KEY,
        "maps embed not loading key=",
        "AIza" + synthetic(B64URL, 35, "gcp"),
        "&callback=initMap",
    ),
    K.GOOGLE_OAUTH_CLIENT_SECRET: Case(
        K.GOOGLE_OAUTH_CLIENT_SECRET,
        '"client_secret": "',
        "GOCSPX-" + synthetic(B64URL, 28, "gocspx"),
        '" invalid_client',
    ),
    K.GOOGLE_OAUTH_ACCESS_TOKEN: Case(
        K.GOOGLE_OAUTH_ACCESS_TOKEN,
        "gmail api 401 with access token ",
        "ya29." + synthetic(B64URL, 160, "ya29"),
    ),
    K.AZURE_STORAGE_ACCOUNT_KEY: Case(
        K.AZURE_STORAGE_ACCOUNT_KEY,
        "DefaultEndpointsProtocol=https;AccountName=demo;AccountKey=",
        synthetic(B64, 86, "azure storage") + "==",
        ";EndpointSuffix=core.windows.net",
    ),
    K.AZURE_SHARED_ACCESS_KEY: Case(
        K.AZURE_SHARED_ACCESS_KEY,
        "Endpoint=sb://demo.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=",
        synthetic(B64, 43, "azure sas") + "=",
    ),
    K.AZURE_AD_CLIENT_SECRET: Case(
        K.AZURE_AD_CLIENT_SECRET,
        "AZURE_CLIENT_SECRET ",
        synthetic(ALNUM, 3, "entra") + "8Q~" + synthetic(ALNUM + "_~.-", 34, "entra body"),
        " expired?",
    ),
    K.GITHUB_TOKEN: Case(
        K.GITHUB_TOKEN,
        "export GITHUB_TOKEN=",
        "ghp_" + synthetic(ALNUM, 36, "github"),
        " && gh auth status",
    ),
    K.GITLAB_TOKEN: Case(
        K.GITLAB_TOKEN,
        "PRIVATE-TOKEN header value ",
        "glpat-" + synthetic(ALNUM + "-_", 20, "gitlab"),
        " returns 401",
    ),
    K.SLACK_TOKEN: Case(
        K.SLACK_TOKEN,
        "SLACK_BOT_TOKEN=",
        "xoxb-"
        + synthetic(string.digits, 12, "slack team")
        + "-"
        + synthetic(string.digits, 13, "slack bot")
        + "-"
        + synthetic(ALNUM, 24, "slack secret"),
        " not_authed",
    ),
    K.SLACK_WEBHOOK_URL: Case(
        K.SLACK_WEBHOOK_URL,
        "curl -X POST ",
        "https://hooks.slack.com/services/T"
        + synthetic(UPPER_DIGITS, 8, "slack t")
        + "/B"
        + synthetic(UPPER_DIGITS, 10, "slack b")
        + "/"
        + synthetic(ALNUM, 24, "slack hook"),
        ' -d \'{"text":"hi"}\'',
    ),
    K.DISCORD_BOT_TOKEN: Case(
        K.DISCORD_BOT_TOKEN,
        "client.run('",
        discord_bot_token("discord"),
        "') raises LoginFailure",
    ),
    K.DISCORD_WEBHOOK_URL: Case(
        K.DISCORD_WEBHOOK_URL,
        "post embed to ",
        "https://discord.com/api/webhooks/1"
        + synthetic(string.digits, 17, "discord hook id")
        + "/"
        + synthetic(B64URL, 68, "discord hook"),
    ),
    K.TELEGRAM_BOT_TOKEN: Case(
        K.TELEGRAM_BOT_TOKEN,
        "https://api.telegram.org/bot",
        synthetic(string.digits, 10, "telegram") + ":AA" + synthetic(B64URL, 33, "telegram"),
        "/getUpdates",
    ),
    K.STRIPE_KEY: Case(
        K.STRIPE_KEY,
        "stripe.api_key = '",
        "sk_live_" + synthetic(ALNUM, 24, "stripe"),
        "'",
    ),
    K.OPENAI_API_KEY: Case(
        K.OPENAI_API_KEY,
        "OPENAI_API_KEY=",
        "sk-proj-" + synthetic(B64URL, 156, "openai"),
        " python app.py",
    ),
    K.ANTHROPIC_API_KEY: Case(
        K.ANTHROPIC_API_KEY,
        "x-api-key header ",
        "sk-ant-api03-" + synthetic(B64URL, 93, "anthropic") + "AA",
        " gives 401",
    ),
    K.HUGGINGFACE_TOKEN: Case(
        K.HUGGINGFACE_TOKEN,
        "huggingface-cli login --token ",
        "hf_" + synthetic(string.ascii_letters, 34, "hf"),
    ),
    K.GROQ_API_KEY: Case(
        K.GROQ_API_KEY, "GROQ_API_KEY=", "gsk_" + synthetic(ALNUM, 52, "groq"), " groq chat"
    ),
    K.XAI_API_KEY: Case(K.XAI_API_KEY, "XAI_API_KEY=", "xai-" + synthetic(ALNUM, 80, "xai")),
    K.REPLICATE_API_TOKEN: Case(
        K.REPLICATE_API_TOKEN, "REPLICATE_API_TOKEN=", "r8_" + synthetic(ALNUM, 37, "replicate")
    ),
    K.OPENROUTER_API_KEY: Case(
        K.OPENROUTER_API_KEY, "openrouter key ", "sk-or-v1-" + synthetic(HEX, 64, "openrouter")
    ),
    K.NPM_TOKEN: Case(
        K.NPM_TOKEN,
        "//registry.npmjs.org/:_authToken=",
        "npm_" + synthetic(ALNUM, 36, "npm"),
    ),
    K.PYPI_TOKEN: Case(
        K.PYPI_TOKEN,
        "twine upload -u __token__ -p ",
        "pypi-AgEIcHlwaS5vcmc" + synthetic(B64URL, 160, "pypi"),
        " dist/*",
    ),
    K.SENDGRID_API_KEY: Case(
        K.SENDGRID_API_KEY,
        "SENDGRID_API_KEY='",
        "SG." + synthetic(B64URL, 22, "sendgrid id") + "." + synthetic(B64URL, 43, "sendgrid"),
        "'",
    ),
    K.SHOPIFY_TOKEN: Case(
        K.SHOPIFY_TOKEN,
        "X-Shopify-Access-Token ",
        "shpat_" + synthetic(HEX, 32, "shopify"),
    ),
    K.DIGITALOCEAN_TOKEN: Case(
        K.DIGITALOCEAN_TOKEN,
        "doctl auth init -t ",
        "dop_v1_" + synthetic(HEX, 64, "digitalocean"),
    ),
    K.DOCKERHUB_TOKEN: Case(
        K.DOCKERHUB_TOKEN,
        "docker login -u me -p ",
        "dckr_pat_" + synthetic(B64URL, 27, "docker"),
    ),
    K.VAULT_TOKEN: Case(
        K.VAULT_TOKEN,
        "VAULT_TOKEN=",
        "hvs." + synthetic(B64URL, 90, "vault"),
        " vault kv get secret/app",
    ),
    K.MAILGUN_API_KEY: Case(
        K.MAILGUN_API_KEY,
        "mailgun returns 401 Forbidden for api:",
        "key-" + synthetic(HEX, 32, "mailgun"),
        " on /v3/domains",
    ),
    K.SQUARE_TOKEN: Case(
        K.SQUARE_TOKEN,
        "SQUARE_ACCESS_TOKEN=",
        "EAAA" + synthetic(B64URL, 60, "square"),
        " square payments create 401",
    ),
    K.DATABRICKS_TOKEN: Case(
        K.DATABRICKS_TOKEN,
        "databricks configure --token ",
        "dapi" + synthetic(HEX, 32, "databricks"),
        " fails with 403",
    ),
    K.LINEAR_API_KEY: Case(
        K.LINEAR_API_KEY,
        "linear graphql Authorization: ",
        "lin_api_" + synthetic(ALNUM, 40, "linear"),
        " returns AUTHENTICATION_ERROR",
    ),
    K.DOPPLER_TOKEN: Case(
        K.DOPPLER_TOKEN,
        "DOPPLER_TOKEN=",
        "dp.st.prd." + synthetic(ALNUM, 44, "doppler"),
        " doppler run -- npm start",
    ),
    K.POSTMAN_API_KEY: Case(
        K.POSTMAN_API_KEY,
        "postman api X-Api-Key: ",
        "PMAK-" + synthetic(HEX, 24, "postman a") + "-" + synthetic(HEX, 34, "postman b"),
        " gives AuthenticationError",
    ),
    K.ATLASSIAN_API_TOKEN: Case(
        K.ATLASSIAN_API_TOKEN,
        "jira rest api curl -u me@example.com:",
        "ATATT3xFfGF0" + synthetic(B64URL, 180, "atlassian"),
        " returns 401",
    ),
    K.PERPLEXITY_API_KEY: Case(
        K.PERPLEXITY_API_KEY,
        "PERPLEXITY_API_KEY=",
        "pplx-" + synthetic(ALNUM, 48, "perplexity"),
        " sonar model 401",
    ),
    K.GRAFANA_TOKEN: Case(
        K.GRAFANA_TOKEN,
        "grafana http api Authorization: Bearer ",
        "glsa_" + synthetic(ALNUM, 32, "grafana") + "_" + synthetic(HEX, 8, "grafana crc"),
        " 401 invalid API key",
    ),
    K.SENTRY_TOKEN: Case(
        K.SENTRY_TOKEN,
        "SENTRY_AUTH_TOKEN=",
        "sntryu_" + synthetic(HEX, 64, "sentry"),
        " sentry-cli releases new",
    ),
    K.TWILIO_CREDENTIAL: Case(
        K.TWILIO_CREDENTIAL,
        "curl -u ",
        "AC" + synthetic(HEX, 32, "twilio sid") + ":" + synthetic(HEX, 32, "twilio auth"),
        " https://api.twilio.com/2010-04-01/Accounts.json",
    ),
    K.NOTION_TOKEN: Case(
        K.NOTION_TOKEN,
        "notion api Bearer ",
        "ntn_" + synthetic(string.digits, 11, "notion id") + synthetic(ALNUM, 35, "notion"),
        " object_not_found",
    ),
    K.WEBHOOK_SIGNING_SECRET: Case(
        K.WEBHOOK_SIGNING_SECRET,
        "stripe listen gives ",
        "whsec_" + synthetic(ALNUM, 32, "stripe webhook"),
        " but signature verification fails",
    ),
    K.NEW_RELIC_KEY: Case(
        K.NEW_RELIC_KEY,
        "NEW_RELIC_API_KEY=",
        "NRAK-" + synthetic(UPPER_DIGITS, 27, "new relic"),
        " nerdgraph 401",
    ),
    K.PRIVATE_KEY: Case(
        K.PRIVATE_KEY,
        "ssh refuses this key: ",
        pem_block("OPENSSH PRIVATE KEY", "openssh"),
        " why?",
    ),
    K.JWT: Case(K.JWT, "Authorization: Bearer ", jwt("jwt"), " returns 403"),
    K.URL_USERINFO: Case(
        K.URL_USERINFO,
        "git clone https://",
        "deploy:" + synthetic(ALNUM, 16, "userinfo"),
        "@git.example.com/team/repo.git",
    ),
    K.CREDENTIAL_HEADER: Case(
        K.CREDENTIAL_HEADER,
        "curl -H 'Authorization: Bearer ",
        synthetic(ALNUM, 20, "opaque") + "7" + synthetic(ALNUM, 19, "opaque tail"),
        "' https://api.example.com/v1/items",
    ),
    K.SECRET_PARAMETER: Case(
        K.SECRET_PARAMETER,
        "https://api.example.com/v1/items?limit=5&api_key=",
        synthetic(HEX, 30, "param") + "a1",
        "&page=2",
    ),
}

# Other shapes of the same kinds.
VARIANT_CASES: dict[str, Case] = {
    "aws_session_key_id": Case(K.AWS_ACCESS_KEY_ID, "", "ASIA" + synthetic(B32, 16, "sts")),
    "aws_key_in_presigned_url": Case(
        K.AWS_ACCESS_KEY_ID,
        "https://bucket.s3.amazonaws.com/a.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=",
        "AKIA" + synthetic(B32, 16, "presigned"),
        "%2F20240501%2Fus-east-1%2Fs3%2Faws4_request",
    ),
    "aws_secret_in_json": Case(
        K.AWS_SECRET_ACCESS_KEY, '{"SecretAccessKey": "', synthetic(B64, 40, "sts secret"), '"}'
    ),
    "github_fine_grained": Case(
        K.GITHUB_TOKEN,
        "token: ",
        "github_pat_" + synthetic(ALNUM, 22, "pat a") + "_" + synthetic(ALNUM, 59, "pat b"),
    ),
    "github_app_installation": Case(K.GITHUB_TOKEN, "", "ghs_" + synthetic(ALNUM, 36, "ghs")),
    "github_in_query_string": Case(
        K.GITHUB_TOKEN,
        "https://example.com/callback?state=af0ifjsldkj&token=",
        "ghp_" + synthetic(ALNUM, 36, "github query"),
        "&next=%2F",
    ),
    "gitlab_deploy_token": Case(K.GITLAB_TOKEN, "", "gldt-" + synthetic(ALNUM, 20, "gldt")),
    "slack_app_token": Case(
        K.SLACK_TOKEN,
        "",
        "xapp-1-A"
        + synthetic(UPPER_DIGITS, 10, "xapp a")
        + "-"
        + synthetic(string.digits, 13, "xapp b")
        + "-"
        + synthetic(HEX, 64, "xapp c"),
    ),
    "stripe_restricted_test": Case(
        K.STRIPE_KEY, "", "rk_test_" + synthetic(ALNUM, 99, "stripe restricted")
    ),
    "openai_legacy": Case(K.OPENAI_API_KEY, "key ", "sk-" + synthetic(ALNUM, 48, "legacy")),
    "huggingface_org": Case(
        K.HUGGINGFACE_TOKEN, "", "api_org_" + synthetic(string.ascii_letters, 34, "hf org")
    ),
    "pypi_test_index": Case(
        K.PYPI_TOKEN, "", "pypi-AgENdGVzdC5weXBpLm9yZw" + synthetic(B64URL, 120, "testpypi")
    ),
    "rsa_pem": Case(K.PRIVATE_KEY, "", pem_block("RSA PRIVATE KEY", "rsa")),
    "pkcs8_pem_json_escaped": Case(
        K.PRIVATE_KEY,
        '{"type": "service_account", "private_key": "',
        pem_block("PRIVATE KEY", "pkcs8", line_break="\\n"),
        '\\n", "client_email": "svc@proj.iam.gserviceaccount.com"}',
    ),
    "encrypted_pem_with_headers": Case(
        K.PRIVATE_KEY,
        "",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
        "DEK-Info: AES-128-CBC,"
        + synthetic(HEX, 32, "iv").upper()
        + "\n\n"
        + synthetic(B64, 64, "encrypted")
        + "\n-----END RSA PRIVATE KEY-----",
    ),
    "pgp_private_block": Case(K.PRIVATE_KEY, "", pem_block("PGP PRIVATE KEY BLOCK", "pgp")),
    "truncated_pem_without_footer": Case(
        K.PRIVATE_KEY,
        "",
        "-----BEGIN EC PRIVATE KEY----- " + synthetic(B64, 48, "ec"),
        " ...",
    ),
    "age_secret_key": Case(
        K.PRIVATE_KEY,
        "",
        "AGE-SECRET-KEY-1" + synthetic("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, "age"),
    ),
    "jwt_unsigned": Case(
        K.JWT,
        "id_token=",
        b64url_json({"alg": "none"}) + "." + b64url_json({"sub": "42"}) + ".",
    ),
    "jwt_before_full_stop": Case(K.JWT, "the token is ", jwt("full stop"), ". Is it valid?"),
    "jwt_before_file_extension": Case(K.JWT, "saved to ", jwt("file"), ".txt but it fails"),
    "jwe_direct_encryption": Case(
        K.JWT,
        "encrypted id_token ",
        b64url_json({"alg": "dir", "enc": "A256GCM"})
        + ".."
        + synthetic(B64URL, 16, "iv")
        + "."
        + synthetic(B64URL, 80, "ciphertext")
        + "."
        + synthetic(B64URL, 22, "tag"),
    ),
    "userinfo_single_letters": Case(K.URL_USERINFO, "https://", "u:p", "@h/"),
    "userinfo_percent_encoded_colon": Case(K.URL_USERINFO, "https://", "u%3Ap", "@h"),
    "userinfo_database_url": Case(
        K.URL_USERINFO,
        "DATABASE_URL=postgres://",
        "app:" + synthetic(ALNUM, 12, "db"),
        "@db.internal:5432/app",
    ),
    "basic_authorization": Case(
        K.CREDENTIAL_HEADER,
        "Authorization: Basic ",
        base64.b64encode(b"alice:" + synthetic(ALNUM, 14, "basic").encode()).decode(),
    ),
    "x_api_key_header": Case(
        K.CREDENTIAL_HEADER, "-H 'X-API-Key: ", synthetic(HEX, 31, "x-api") + "z", "'"
    ),
    "connection_string_password": Case(
        K.SECRET_PARAMETER,
        "Server=db;Database=app;User Id=sa;Password=",
        "Tr0ub4dor" + synthetic(ALNUM, 6, "ado"),
        ";",
    ),
    "password_with_a_quote_inside": Case(
        K.SECRET_PARAMETER, "psql --password=", "Zq8x'" + synthetic(ALNUM, 9, "quote"), " db"
    ),
    "quoted_password": Case(
        K.SECRET_PARAMETER, 'Password="', "Tr0ub4" + synthetic(ALNUM, 8, "quoted"), '";'
    ),
    "cli_flag_password": Case(
        K.SECRET_PARAMETER, "mysql -u root --password=", "Zq8" + synthetic(ALNUM, 9, "cli")
    ),
}
PUTTY_FILE, PUTTY_PRIVATE = putty_key_file("putty")
SAS_SIGNATURE = quote(base64.b64encode(hashlib.sha256(b"sas").digest()).decode(), safe="")
VARIANT_CASES.update(
    {
        "putty_private_part": Case(
            K.PRIVATE_KEY,
            PUTTY_FILE[: PUTTY_FILE.index("Private-Lines")],
            PUTTY_PRIVATE,
            PUTTY_FILE[PUTTY_FILE.index("Private-Lines") + len(PUTTY_PRIVATE) :],
        ),
        "openai_project_documented_shape": Case(
            K.OPENAI_API_KEY, "client = OpenAI(api_key='", openai_key("proj", "openai p"), "')"
        ),
        "openai_service_account": Case(
            K.OPENAI_API_KEY, "OPENAI_API_KEY=", openai_key("svcacct", "openai s"), " in CI"
        ),
        "mailgun_current_private_key": Case(
            K.MAILGUN_API_KEY,
            "MAILGUN_KEY ",
            synthetic(HEX, 32, "mg new")
            + "-"
            + synthetic(HEX, 8, "mg b")
            + "-"
            + synthetic(HEX, 8, "mg c"),
        ),
        "square_personal_access_token": Case(
            K.SQUARE_TOKEN, "square token ", "sq0atp-" + synthetic(B64URL, 22, "sq0atp")
        ),
        "square_application_secret": Case(
            K.SQUARE_TOKEN, "client secret ", "sq0csp-" + synthetic(B64URL, 43, "sq0csp")
        ),
        "databricks_with_suffix": Case(
            K.DATABRICKS_TOKEN, "token = ", "dapi" + synthetic(HEX, 32, "dapi 2") + "-2"
        ),
        "doppler_personal_token": Case(
            K.DOPPLER_TOKEN, "doppler login token ", "dp.pt." + synthetic(ALNUM, 43, "doppler pt")
        ),
        "grafana_cloud_token": Case(
            K.GRAFANA_TOKEN,
            "loki basic auth password ",
            "glc_"
            + b64_json(
                {
                    "o": "744587",
                    "n": "stack-1-logs",
                    "k": synthetic(ALNUM, 24, "glc"),
                    "m": {"r": "eu"},
                }
            ),
        ),
        "sentry_org_token": Case(
            K.SENTRY_TOKEN,
            "",
            "sntrys_"
            + b64_json(
                {
                    "iat": 1700000000.5,
                    "url": "https://sentry.io",
                    "region_url": "https://de.sentry.io",
                    "org": "acme",
                }
            ).rstrip("=")
            + "_"
            + synthetic(B64, 43, "sentry org"),
        ),
        "twilio_api_key_pair": Case(
            K.TWILIO_CREDENTIAL,
            "client = Client(",
            "SK" + synthetic(HEX, 32, "twilio sk") + ":" + synthetic(ALNUM, 32, "twilio secret"),
            ")",
        ),
        "notion_legacy_integration": Case(
            K.NOTION_TOKEN, "NOTION_KEY ", "secret_" + synthetic(ALNUM, 43, "notion legacy")
        ),
        "webhook_secret_base64": Case(
            K.WEBHOOK_SIGNING_SECRET,
            "svix webhook secret ",
            "whsec_" + base64.b64encode(hashlib.sha256(b"svix").digest()).decode(),
        ),
        "new_relic_insert_key": Case(
            K.NEW_RELIC_KEY, "X-Insert-Key ", "NRII-" + synthetic(B64URL, 32, "nrii")
        ),
        "new_relic_license_key": Case(
            K.NEW_RELIC_KEY, "license_key: ", synthetic(HEX, 36, "nral") + "NRAL"
        ),
        "linear_oauth_token": Case(
            K.LINEAR_API_KEY,
            "Authorization header ",
            "lin_oauth_" + synthetic(HEX, 64, "lin oauth"),
        ),
        "atlassian_admin_api_key": Case(
            K.ATLASSIAN_API_TOKEN,
            "org admin key ",
            "ATCTT3xFfGN0" + synthetic(B64URL, 180, "atctt"),
        ),
        "bitbucket_app_password": Case(
            K.ATLASSIAN_API_TOKEN, "git push with ", "ATBB" + synthetic(ALNUM, 32, "atbb")
        ),
        "new_relic_regional_license_key": Case(
            K.NEW_RELIC_KEY, "license_key: ", "eu01xx" + synthetic(HEX, 30, "nral eu") + "NRAL"
        ),
        "putty_private_part_after_json_escapes": Case(
            K.PRIVATE_KEY,
            "PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none\\n",
            "Private-Lines: 1\\n" + synthetic(B64, 60, "putty json") + "==",
            "\\nPrivate-MAC: " + synthetic(HEX, 64, "putty json mac"),
        ),
        "jsessionid_path_parameter": Case(
            K.SECRET_PARAMETER,
            "https://shop.example.com/cart;jsessionid=",
            synthetic(ALNUM, 32, "jsession"),
            "?item=4",
        ),
        "session_id_parameter": Case(
            K.SECRET_PARAMETER,
            "https://app.example.com/?session_id=",
            synthetic(B64URL, 32, "session id"),
        ),
        # URL query parameters with a broad credential name and a generated value.
        "token_parameter": Case(
            K.SECRET_PARAMETER,
            "https://app.example.com/invite/accept?token=",
            synthetic(B64URL, 32, "invite"),
            "&ref=mail",
        ),
        "key_parameter": Case(
            K.SECRET_PARAMETER,
            "https://maps.example.com/maps/api/js?key=",
            synthetic(HEX, 32, "maps key"),
            "&callback=initMap",
        ),
        "azure_sas_signature": Case(
            K.SECRET_PARAMETER,
            "https://acct.blob.core.windows.net/c/report.pdf?sv=2022-11-02&ss=b&srt=o&sp=r"
            "&se=2025-01-01T00:00:00Z&spr=https&sig=",
            SAS_SIGNATURE,
        ),
        "s3_presigned_signature": Case(
            K.SECRET_PARAMETER,
            "https://bucket.s3.amazonaws.com/a.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Expires=900&X-Amz-Signature=",
            synthetic(HEX, 64, "amz sig"),
        ),
        "secret_parameter_generic": Case(
            K.SECRET_PARAMETER,
            "https://hooks.example.net/ingest?secret=",
            synthetic(ALNUM, 24, "hook secret"),
            "&v=1",
        ),
        "auth_parameter": Case(
            K.SECRET_PARAMETER,
            "https://demo.firebaseio.com/users.json?auth=",
            synthetic(ALNUM, 40, "firebase"),
        ),
        "apikey_parameter_uuid": Case(
            K.SECRET_PARAMETER,
            "https://api.example.org/v2/forecast?lat=1&apikey=",
            "3f2c8a9e-5b1d-4c7a-9e2f-8d6b4a1c0e7f",
        ),
        "token_command_line_flag": Case(
            K.SECRET_PARAMETER,
            "terraform login --token=",
            synthetic(ALNUM, 30, "cli token"),
            " -no-color",
        ),
        "token_in_url_fragment": Case(
            K.SECRET_PARAMETER,
            "https://app.example.com/callback#token=",
            synthetic(B64URL, 40, "fragment token"),
        ),
        "percent_encoded_token_parameter": Case(
            K.SECRET_PARAMETER,
            "https://example.com/login?next=%2Fhome%3Ftoken%3D",
            synthetic(ALNUM, 28, "nested token"),
        ),
    }
)
ALL_CASES = [*KIND_CASES.values(), *VARIANT_CASES.values()]
# The formats added for issue 9; each is also checked as the value of a URL parameter.
PROVIDER_KINDS_ADDED = (
    K.MAILGUN_API_KEY, K.SQUARE_TOKEN, K.DATABRICKS_TOKEN, K.LINEAR_API_KEY, K.DOPPLER_TOKEN,
    K.POSTMAN_API_KEY, K.ATLASSIAN_API_TOKEN, K.PERPLEXITY_API_KEY, K.GRAFANA_TOKEN,
    K.SENTRY_TOKEN, K.TWILIO_CREDENTIAL, K.NOTION_TOKEN, K.WEBHOOK_SIGNING_SECRET,
    K.NEW_RELIC_KEY,
)  # fmt: skip

NOT_CREDENTIALS: dict[str, str] = {
    "aws_placeholder": "AKIA" + "X" * 16,
    "aws_documented_example": "AKIAIOSFODNN7EXAMPLE",
    "aws_key_one_char_too_long": "AKIA" + synthetic(B32, 17, "long"),
    "github_placeholder": "ghp_" + "x" * 36,
    "github_one_char_short": "ghp_" + synthetic(ALNUM, 35, "short"),
    "github_inside_identifier": "check_ghp_" + synthetic(ALNUM, 36, "inside"),
    "token_inside_base64_blob": synthetic(B64, 30, "blob")
    + "AKIA"
    + synthetic(B32, 16, "blob")
    + synthetic(B64, 30, "blob tail"),
    "pem_header_only": "what is -----BEGIN RSA PRIVATE KEY----- in my id_rsa",
    "pem_truncated_in_docs": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n"
    "-----END RSA PRIVATE KEY-----",
    "public_key_block": pem_block("PUBLIC KEY", "public"),
    "certificate_block": pem_block("CERTIFICATE", "certificate"),
    "jwt_header_only": b64url_json({"alg": "HS256", "typ": "JWT"}),
    "jwt_shape_without_alg": b64url_json({"typ": "JWT"}) + ".eyJzdWIiOiIxIn0." + "s" * 20,
    "jwt_shape_not_json": "eyJ"
    + synthetic(B64URL, 30, "nj")
    + "."
    + synthetic(B64URL, 30, "p")
    + "."
    + synthetic(B64URL, 30, "s"),
    "discord_shape_with_text_id": base64.urlsafe_b64encode(b"1not-a-user-id-at")
    .decode()
    .rstrip("=")
    + "."
    + synthetic(B64URL, 6, "d")
    + "."
    + synthetic(B64URL, 38, "d"),
    "userinfo_placeholder_password": "postgres://user:password@localhost:5432/db",
    "userinfo_template": "mongodb+srv://<username>:<password>@cluster0.example.net/",
    "userinfo_default_equal_to_user": "amqp://guest:guest@localhost:5672/",
    "userinfo_user_only": "https://git@github.com/org/repo.git",
    "email_in_query": "https://example.com/?email=alice@example.com&x=1",
    "bearer_placeholder": "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
    "bearer_variable_name": "Authorization: Bearer accessTokenFromStorage",
    "basic_placeholder": "Authorization: Basic " + base64.b64encode(b"username:password").decode(),
    "parameter_placeholder": "https://api.nasa.gov/planetary/apod?api_key=DEMO_KEY",
    "parameter_word_only": "https://example.com/?password=correcthorsebatterystaple",
    "sha256_hex": hashlib.sha256(b"ordinary").hexdigest(),
    "sk_learn": "pip install sk-learn",
    # A private-key header followed by prose: a question about the format.
    "pem_header_then_prose": "-----BEGIN OPENSSH PRIVATE KEY----- what does this header mean "
    "and why does ssh-keygen write it instead of the older format",
    "pem_block_of_prose": "-----BEGIN RSA PRIVATE KEY-----\nhow do I convert this to PKCS8 "
    "format using openssl pkcs8 -topk8\n-----END RSA PRIVATE KEY-----",
    "pem_header_then_long_words": "-----BEGIN PRIVATE KEY----- internationalization "
    "representational counterrevolutionaries",
    "putty_header_without_key": "what is Private-Lines: 14 in a PuTTY-User-Key-File-3 file",
    # Provider look-alikes: placeholders, wrong lengths, identifiers that are public.
    "mailgun_placeholder": "api:key-" + "x" * 32,
    "mailgun_public_validation_key": "pubkey-" + synthetic(HEX, 32, "mg pub"),
    "square_token_short": "EAAA" + synthetic(B64URL, 40, "eaaa short"),
    "databricks_one_short": "dapi" + synthetic(HEX, 31, "dapi short"),
    "linear_placeholder": "lin_api_" + "x" * 40,
    "doppler_wrong_length": "dp.pt." + synthetic(ALNUM, 20, "dp short"),
    "postman_placeholder": "PMAK-" + "X" * 24 + "-" + "X" * 34,
    "atlassian_prefix_alone": "ATATT3xFfGF0 token format",
    "perplexity_one_short": "pplx-" + synthetic(ALNUM, 47, "pplx short"),
    "grafana_placeholder": "glsa_" + "X" * 32 + "_AAAAAAAA",
    "sentry_one_short": "sntryu_" + synthetic(HEX, 63, "sntryu short"),
    "twilio_account_sid_alone": "AC" + synthetic(HEX, 32, "twilio sid only"),
    "twilio_api_key_sid_alone": "SK" + synthetic(HEX, 32, "twilio sk only"),
    "notion_too_short": "ntn_12345678901abc",
    "notion_secret_word": "rails secret_key_base rotation",
    "webhook_placeholder": "whsec_" + "x" * 32,
    "new_relic_browser_key_is_public": "NRJS-" + synthetic(HEX, 19, "nrjs"),
    "new_relic_one_short": "NRAK-" + synthetic(UPPER_DIGITS, 26, "nrak short"),
    # URL parameters named like credentials whose values are words, ids or dates.
    "key_word": "https://music.example.com/transpose?key=chord&capo=2",
    "key_musical": "https://tabs.example.com/song?key=Cmaj7add9sus4",
    "id_number": "https://shop.example.com/item?id=12345&key=value",
    "token_word": "https://example.com/?access=1&token=expired",
    "key_date": "https://api.example.com/cache?key=2023-01-01T00:00:00Z",
    "key_camel_case_name": "https://cdn.example.com/app.js?key=GoogleMapsApiDemo2024",
    "token_variable_name": "https://example.com/debug?token=accessTokenFromStorage",
    "sig_slug": "https://blog.example.com/post?sig=release-2023-11-05-final",
    "key_with_colons": "https://redis.example.com/inspect?key=user:12345:profile:settings",
    "key_path": "https://storage.example.com/get?key=photos/2023/holiday/img_0042.jpg",
    "key_long_word": "https://dict.example.com/lookup?key=counterrevolutionaries",
    "token_placeholder": "https://api.example.com/v1?token=YOUR_TOKEN_HERE",
    "token_template": "https://api.example.com/v1?token={{token}}&page=2",
    "key_filler": "https://api.example.com/v1?key=AAAAAAAAAAAAAAAAAAAAAAAA",
    "key_version": "https://pkg.example.com/dl?key=python-3.11.7-amd64-full",
    "page_token_is_pagination": "https://www.googleapis.com/drive/v3/files?pageToken="
    + synthetic(B64URL, 40, "page token"),
    "next_token_is_pagination": "https://api.example.com/list?next_token="
    + synthetic(B64URL, 40, "next token"),
    "sort_key_is_not_a_credential": "https://db.example.com/scan?sort_key="
    + synthetic(HEX, 32, "sort key"),
    "monkey_is_not_key": "https://zoo.example.com/?monkey=" + synthetic(HEX, 32, "monkey"),
    "token_short_generated": "https://example.com/?token=" + synthetic(ALNUM, 12, "short tok"),
    "token_hex_digest_of_lowercase": "https://example.com/?token=abcdefabcdefabcdefab",
    "session_id_number": "https://forum.example.com/view?session_id=42&page=3",
    "sessionid_word": "https://shop.example.com/cart?sessionid=abc123",
    "jsessionid_question": "spring boot remove ;jsessionid= from urls",
    "bitbucket_prefix_alone": "ATBB app password replaced by API tokens",
    "bitbucket_lowercase_run": "ATBB" + "abcdefghijklmnopqrstuvwxyzabcdef",
    "linear_oauth_prefix_alone": "lin_oauth_ token scopes",
    "new_relic_region_prefix_alone": "eu01xx license key region NRAL",
    "private_lines_in_a_word": "XPrivate-Lines: 1\n" + synthetic(B64, 60, "putty word"),
}


# -- detection ----------------------------------------------------------------------------


@pytest.mark.req("REQ-PRIV-002")
def test_every_kind_has_a_detection_case() -> None:
    """REQ-PRIV-002: each kind of the vocabulary is exercised by a detection test."""
    assert set(KIND_CASES) == set(CredentialKind)
    assert all(case.kind is kind for kind, case in KIND_CASES.items())


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize("case", KIND_CASES.values(), ids=[k.value for k in KIND_CASES])
def test_detects_each_kind_at_its_exact_position(case: Case) -> None:
    """REQ-PRIV-002: one credential of each kind is found with its kind, start and length."""
    assert find_credentials(case.text) == (case.expected,)


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize("case", VARIANT_CASES.values(), ids=list(VARIANT_CASES))
def test_detects_other_shapes_of_a_kind(case: Case) -> None:
    """REQ-PRIV-002: other prefixes, encodings and contexts of a kind are found exactly."""
    assert find_credentials(case.text) == (case.expected,)


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize("text", NOT_CREDENTIALS.values(), ids=list(NOT_CREDENTIALS))
def test_near_misses_are_not_findings(text: str) -> None:
    """REQ-PRIV-002: placeholders, public material and look-alikes are not credentials."""
    assert find_credentials(text) == ()


@pytest.mark.req("REQ-PRIV-002")
def test_positions_count_unicode_scalar_values() -> None:
    """REQ-PRIV-002, LIM-U1: a position counts scalar values, not UTF-16 units or bytes."""
    prefix = "Ключ 🔑 "
    token = KIND_CASES[K.GITHUB_TOKEN].value
    assert len(prefix.encode("utf-16-le")) // 2 == 8
    assert len(prefix.encode("utf-8")) == 14
    assert find_credentials(prefix + token) == (CredentialFinding(K.GITHUB_TOKEN, 7, len(token)),)


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize("case", ALL_CASES, ids=[*KIND_CASES, *VARIANT_CASES])
def test_positions_hold_after_non_ascii_text(case: Case) -> None:
    """REQ-PRIV-002, LIM-U1: each non-ASCII or astral character before a value counts once."""
    prefix = "Почему 東京 🙂 ما هذا? "
    shifted = CredentialFinding(case.kind, len(prefix) + len(case.before), len(case.value))
    assert find_credentials(prefix + case.text) == (shifted,)


@pytest.mark.req("REQ-PRIV-002")
def test_percent_encoded_token_in_a_query_string_is_found_in_the_original_text() -> None:
    """REQ-PRIV-002: a percent-encoded token is found, at its position in the raw text."""
    token = KIND_CASES[K.GITHUB_TOKEN].value
    encoded = token.replace("_", "%5F")
    prefix = "https://example.com/cb?token%3D"
    findings = find_credentials(prefix + encoded + "&a=1")
    assert findings == (CredentialFinding(K.GITHUB_TOKEN, len(prefix), len(encoded)),)


@pytest.mark.req("REQ-PRIV-002")
def test_userinfo_of_a_url_nested_in_a_query_string_is_found() -> None:
    """REQ-PRIV-002: a URL with a password, percent-encoded as a parameter, is found."""
    password = synthetic(ALNUM, 14, "nested")
    prefix = "https://example.com/login?next="
    nested = quote(f"https://admin:{password}@intranet.example/reports", safe="")
    scheme = quote("https://", safe="")
    userinfo = quote(f"admin:{password}", safe="")
    findings = find_credentials(prefix + nested)
    assert findings == (
        CredentialFinding(K.URL_USERINFO, len(prefix) + len(scheme), len(userinfo)),
    )


@pytest.mark.req("REQ-PRIV-002")
def test_percent_encoded_private_key_in_a_url_is_found_whole() -> None:
    """REQ-PRIV-002: a private key percent-encoded into a URL is found header to footer."""
    prefix = "https://paste.example/new?text="
    encoded = quote(pem_block("RSA PRIVATE KEY", "encoded"), safe="")
    assert find_credentials(prefix + encoded) == (
        CredentialFinding(K.PRIVATE_KEY, len(prefix), len(encoded)),
    )


@pytest.mark.req("REQ-PRIV-002")
def test_several_credentials_are_sorted_and_separate() -> None:
    """REQ-PRIV-002: each credential of a text is its own finding, in order of position."""
    aws = KIND_CASES[K.AWS_ACCESS_KEY_ID].value
    slack = KIND_CASES[K.SLACK_TOKEN].value
    text = f"{slack} and {aws}"
    assert find_credentials(text) == (
        CredentialFinding(K.SLACK_TOKEN, 0, len(slack)),
        CredentialFinding(K.AWS_ACCESS_KEY_ID, len(slack) + 5, len(aws)),
    )


@pytest.mark.req("REQ-PRIV-002")
def test_a_token_used_as_url_password_is_one_finding_named_by_the_token() -> None:
    """REQ-PRIV-002: overlapping matches merge into one finding named by the specific kind."""
    token = KIND_CASES[K.GITHUB_TOKEN].value
    text = f"https://x-access-token:{token}@github.com/org/repo.git"
    userinfo = f"x-access-token:{token}"
    assert find_credentials(text) == (CredentialFinding(K.GITHUB_TOKEN, 8, len(userinfo)),)


@pytest.mark.req("REQ-PRIV-002")
def test_a_merged_finding_reaches_the_end_of_its_longest_match() -> None:
    """REQ-PRIV-002: a token nested inside a longer userinfo does not cut the finding short."""
    token = KIND_CASES[K.GITHUB_TOKEN].value
    for userinfo in (f"{token}:x-oauth-basic", f"ci:{token}-old%21"):
        text = f"https://{userinfo}@github.com/org/repo.git"
        assert find_credentials(text) == (CredentialFinding(K.GITHUB_TOKEN, 8, len(userinfo)),)


@pytest.mark.req("REQ-PRIV-002")
def test_empty_text_has_no_findings() -> None:
    """REQ-PRIV-002: the empty text is checked and has nothing to report."""
    assert find_credentials("") == ()


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize("kind", PROVIDER_KINDS_ADDED, ids=[k.value for k in PROVIDER_KINDS_ADDED])
def test_each_added_format_is_found_as_a_url_parameter(kind: CredentialKind) -> None:
    """REQ-PRIV-002: a provider's key in a query string is found and named by its format."""
    value = KIND_CASES[kind].value
    prefix = "https://api.example.com/v1/items?page=2&token="
    text = f"{prefix}{value}&limit=5"
    assert find_credentials(text) == (CredentialFinding(kind, len(prefix), len(value)),)


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize("variant", ["openai_project_documented_shape", "openai_service_account"])
def test_openai_project_and_service_account_keys_are_found_as_url_parameters(
    variant: str,
) -> None:
    """REQ-PRIV-002: OpenAI's project and service-account keys in a query string are named."""
    value = VARIANT_CASES[variant].value
    prefix = "https://proxy.example.com/v1/chat?model=x&key="
    assert find_credentials(prefix + value) == (
        CredentialFinding(K.OPENAI_API_KEY, len(prefix), len(value)),
    )


@pytest.mark.req("REQ-PRIV-002")
def test_a_percent_encoded_putty_key_in_a_url_is_found_from_its_private_part() -> None:
    """REQ-PRIV-002: a PuTTY key file pasted into a URL is found; its public part stays."""
    prefix = "https://paste.example/new?text="
    encoded = quote(PUTTY_FILE, safe="")
    private = quote(PUTTY_PRIVATE, safe="")
    start = len(prefix) + encoded.index(private)
    assert find_credentials(prefix + encoded) == (
        CredentialFinding(K.PRIVATE_KEY, start, len(private)),
    )


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize(
    "name",
    ["token", "access_token", "api_key", "apikey", "key", "secret", "password", "auth", "sig",
     "Signature", "X-Amz-Security-Token", "client_secret", "subscription-key", "id_token"],
)  # fmt: skip
def test_every_credential_parameter_name_is_read(name: str) -> None:
    """REQ-PRIV-002: each documented parameter name carries a generated value as a secret."""
    value = synthetic(ALNUM, 30, "param " + name) + "7"
    prefix = f"https://svc.example.com/api?v=1&{name}="
    assert find_credentials(prefix + value) == (
        CredentialFinding(K.SECRET_PARAMETER, len(prefix), len(value)),
    )


ALPHABETS = {"base62": ALNUM, "base64": B64, "base64url": B64URL, "hex": HEX}


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.parametrize(
    ("alphabet", "length", "most_missed"),
    [("base62", 32, 3), ("base64", 32, 3), ("base64url", 32, 3), ("hex", 32, 1),
     ("base62", 64, 1), ("base64url", 64, 1), ("hex", 64, 1), ("hex", 16, 5)],
)  # fmt: skip
def test_generated_values_are_found_at_the_documented_rate(
    alphabet: str, length: int, most_missed: int
) -> None:
    """REQ-PRIV-002: measures misses: of 1,000 random values under `token=`, few pass unseen.

    The figures are the ones docs/credential-check.md states (percent, rounded up).
    """
    missed = 0
    for index in range(1_000):
        value = synthetic(ALPHABETS[alphabet], length, f"rate {alphabet} {length} {index}")
        if not find_credentials(f"https://example.com/?token={value}"):
            missed += 1
    assert missed <= most_missed * 10


# -- what a finding carries -------------------------------------------------------------------


@pytest.mark.req("REQ-PRIV-002", "REQ-PRIV-004", "REQ-ERR-004")
@pytest.mark.parametrize("case", KIND_CASES.values(), ids=[k.value for k in KIND_CASES])
def test_a_finding_never_holds_the_value(case: Case) -> None:
    """REQ-PRIV-002, REQ-PRIV-004, REQ-ERR-004: a finding and its repr hold no value."""
    (finding,) = find_credentials(case.text)
    assert {field.name for field in dataclasses.fields(finding)} == {"kind", "start", "length"}
    assert case.value not in repr(finding)
    assert case.value not in str(finding)
    assert case.value not in repr(find_credentials(case.text))


@pytest.mark.req("REQ-PRIV-002")
def test_a_finding_rejects_an_impossible_span() -> None:
    """REQ-PRIV-002: a finding starts at 0 or later and covers at least one character."""
    with pytest.raises(ValueError):
        CredentialFinding(K.JWT, -1, 3)
    with pytest.raises(ValueError):
        CredentialFinding(K.JWT, 0, 0)


@pytest.mark.req("REQ-PRIV-002")
def test_the_kind_vocabulary_is_fixed() -> None:
    """REQ-PRIV-002, CLR-6: callers see these kind names and no others; a rename breaks them."""
    assert {kind.value for kind in CredentialKind} == {
        "aws_access_key_id",
        "aws_secret_access_key",
        "gcp_api_key",
        "google_oauth_client_secret",
        "google_oauth_access_token",
        "azure_storage_account_key",
        "azure_shared_access_key",
        "azure_ad_client_secret",
        "github_token",
        "gitlab_token",
        "slack_token",
        "slack_webhook_url",
        "discord_bot_token",
        "discord_webhook_url",
        "telegram_bot_token",
        "stripe_key",
        "openai_api_key",
        "anthropic_api_key",
        "huggingface_token",
        "groq_api_key",
        "xai_api_key",
        "replicate_api_token",
        "openrouter_api_key",
        "npm_token",
        "pypi_token",
        "sendgrid_api_key",
        "shopify_token",
        "digitalocean_token",
        "dockerhub_token",
        "vault_token",
        "mailgun_api_key",
        "square_token",
        "databricks_token",
        "linear_api_key",
        "doppler_token",
        "postman_api_key",
        "atlassian_api_token",
        "perplexity_api_key",
        "grafana_token",
        "sentry_token",
        "twilio_credential",
        "notion_token",
        "webhook_signing_secret",
        "new_relic_key",
        "private_key",
        "jwt",
        "url_userinfo",
        "credential_header",
        "secret_parameter",
    }


@pytest.mark.req("REQ-TEST-008")
def test_modes_are_those_of_lim_p1() -> None:
    """REQ-TEST-008, LIM-P1: the modes are deny, warn, mask and off, and the default is deny."""
    assert tuple(mode.value for mode in CredentialMode) == limits.CREDENTIAL_CHECK_MODES
    assert CredentialMode(limits.CREDENTIAL_CHECK_DEFAULT) is CredentialMode.DENY


@pytest.mark.req("REQ-PRIV-002")
def test_the_documentation_lists_every_kind() -> None:
    """REQ-PRIV-002: docs/credential-check.md has a table row for each kind."""
    page = DOC.read_text(encoding="utf-8")
    missing = [kind.value for kind in CredentialKind if f"| `{kind.value}` |" not in page]
    assert missing == []


# -- masking --------------------------------------------------------------------------------


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-008")
@pytest.mark.parametrize("case", ALL_CASES, ids=[*KIND_CASES, *VARIANT_CASES])
def test_masking_replaces_the_value_and_keeps_the_rest(case: Case) -> None:
    """REQ-PRIV-002, REQ-TEST-008: mask mode sends the text with the value replaced by a marker."""
    masked = mask_credentials(case.text, find_credentials(case.text))
    assert masked == f"{case.before}[masked:{case.kind.value}]{case.after}"
    assert case.value not in masked


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-008")
def test_masked_text_has_nothing_left_to_find() -> None:
    """REQ-PRIV-002, REQ-TEST-008: the markers themselves are not credentials."""
    text = " | ".join(case.text for case in ALL_CASES)
    masked = mask_credentials(text, find_credentials(text))
    assert find_credentials(masked) == ()
    assert masked.count("[masked:") == len(ALL_CASES)


@pytest.mark.req("REQ-PRIV-002")
def test_masking_merges_overlapping_findings_and_accepts_any_order() -> None:
    """REQ-PRIV-002: overlapping or unsorted findings still remove every covered character."""
    text = "0123456789"
    findings = [
        CredentialFinding(K.JWT, 5, 3),
        CredentialFinding(K.GITHUB_TOKEN, 1, 3),
        CredentialFinding(K.JWT, 2, 4),
    ]
    assert mask_credentials(text, findings) == "0[masked:github_token]89"
    adjacent = [CredentialFinding(K.JWT, 4, 2), CredentialFinding(K.GITHUB_TOKEN, 1, 3)]
    assert mask_credentials(text, adjacent) == "0[masked:github_token][masked:jwt]6789"


@pytest.mark.req("REQ-PRIV-002")
def test_masking_refuses_a_finding_outside_the_text() -> None:
    """REQ-PRIV-002: a finding from another text is an error, not a partial mask."""
    with pytest.raises(ValueError):
        mask_credentials("short", [CredentialFinding(K.JWT, 3, 10)])


# -- false positives -------------------------------------------------------------------------


def corpus_queries() -> list[tuple[int, str]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [
        (number, line)
        for number, line in enumerate(lines, start=1)
        if line.strip() and not line.startswith("#")
    ]


@pytest.mark.req("REQ-PRIV-002")
def test_no_false_positives_on_ordinary_queries() -> None:
    """REQ-PRIV-002: measures false positives: findings over >=400 ordinary queries (want 0).

    The corpus (tests/fixtures/ordinary_queries.txt) holds natural language in many
    scripts, code, errors, hashes, SHAs, UUIDs, base64 of text, versions, paths,
    URLs, identifiers and credential look-alikes; each line is one query.
    """
    queries = corpus_queries()
    assert len(queries) >= 400
    flagged = [
        (number, [finding.kind.value for finding in findings])
        for number, query in queries
        if (findings := find_credentials(query))
    ]
    assert flagged == [], f"false positives (line, kinds) over {len(queries)} queries"


# -- bounded work ----------------------------------------------------------------------------

ADVERSARIAL_UNIT = {
    "one_letter": "A",
    "token_prefixes": "ghp_",
    "jwt_starts": "eyJ.",
    "jwt_segments": "eyJAAAAAAAAAAA.",
    "scheme_separators": "a://",
    "userinfo_marks": "a:a@",
    "pem_headers": "-----BEGIN PRIVATE KEY-----",
    "pem_body": "-----BEGIN RSA PRIVATE KEY----- A ",
    "percent_escapes": "%41",
    "percent_and_at": "%40=",
    "secret_parameters": "?password=",
    "repeated_parameters": "password=password=",
    "bearer_headers": "Authorization: Bearer ",
    "slack_segments": "xoxb-1-",
    "discord_ids": "M" * 26 + ".",
    "azure_marks": "8Q~",
    "digits": "1",
    "broad_parameters": "&token=a1",
    "parameter_chains": "key=key=",
    "generated_looking_values": "?sig=" + synthetic(ALNUM, 40, "hostile") + "&",
    "putty_sections": "Private-Lines: 1\nAAAA",
    "putty_private_mac": "Private-Lines: 9 Private-MAC: ",
    "twilio_sids": "AC" + "0a" * 16 + ":",
    "sentry_org_starts": "sntrys_eyJpYXQiO",
    "grafana_cloud_starts": "glc_eyJ",
    "doppler_slugs": "dp.st.ab.",
    "atlassian_starts": "ATATT3",
    "mailgun_hex_groups": "0123456789abcdef" * 2 + "-",
}


@pytest.mark.req("REQ-PRIV-002", "REQ-SEARCH-006")
@pytest.mark.timeout(10)
@pytest.mark.parametrize("unit", ADVERSARIAL_UNIT.values(), ids=list(ADVERSARIAL_UNIT))
def test_adversarial_100_kb_input_finishes_quickly(unit: str) -> None:
    """REQ-PRIV-002, REQ-SEARCH-006: the pre-request check is linear on hostile 100 KB input."""
    text = unit * (100_000 // len(unit))
    findings = find_credentials(text)
    assert all(f.start >= 0 and f.start + f.length <= len(text) for f in findings)


def _repeats(tree: list[tuple[object, object]]) -> Iterator[tuple[object, int, int]]:
    """(operator, min, max) of every repetition in a parsed pattern, nested ones too."""
    for op, argument in tree:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, item = argument  # type: ignore[misc]
            yield op, low, high
            yield from _repeats(item)
        elif op is sre.SUBPATTERN:
            yield from _repeats(argument[3])  # type: ignore[index]
        elif op is sre.BRANCH:
            for branch in argument[1]:  # type: ignore[index]
                yield from _repeats(branch)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            yield from _repeats(argument[1])  # type: ignore[index]
        elif op is sre.ATOMIC_GROUP:
            yield from _repeats(argument)  # type: ignore[arg-type]


# A repetition that may backtrack is allowed only this much choice: with it, no
# pattern can try more than a constant number of ways at one start position.
MOST_BACKTRACKING_CHOICE = 64


@pytest.mark.req("REQ-PRIV-002", "REQ-SEARCH-006")
@pytest.mark.parametrize("rank", range(len(rules.RULES)))
def test_every_pattern_is_linear_by_construction(rank: int) -> None:
    """REQ-PRIV-002, REQ-SEARCH-006: each rule starts at a literal or behind a boundary, and
    repeats either possessively or with a small bounded choice, so no input can make the
    check backtrack catastrophically (complexity by construction, not by a timer)."""
    pattern = rules.RULES[rank].pattern
    tree = list(sre_parse.parse(pattern.pattern, pattern.flags))
    first_op, first_argument = tree[0]
    behind = first_op is sre.ASSERT_NOT and first_argument[0] == -1  # type: ignore[index]
    assert first_op is sre.LITERAL or behind
    for op, low, high in _repeats(tree):
        if op is not sre.POSSESSIVE_REPEAT:
            assert high - low <= MOST_BACKTRACKING_CHOICE, (str(op), low, high)


@pytest.mark.req("REQ-PRIV-002")
@pytest.mark.timeout(10)
def test_a_credential_after_100_kb_of_text_is_still_found() -> None:
    """REQ-PRIV-002: nothing is truncated: the end of a long text is checked too."""
    filler = "lorem ipsum " * 8_400
    token = KIND_CASES[K.NPM_TOKEN].value
    assert find_credentials(filler + token) == (
        CredentialFinding(K.NPM_TOKEN, len(filler), len(token)),
    )


# -- properties ------------------------------------------------------------------------------

FRAGMENTS = [
    "ghp_",
    "AKIA",
    "eyJ",
    "eyJhbGciOiJIUzI1NiJ9",
    ".",
    "://",
    "https://",
    "@",
    ":",
    "%3A",
    "%40",
    "%2F",
    "%",
    "-----BEGIN ",
    "RSA ",
    "PRIVATE KEY-----",
    "-----END ",
    "\\n",
    "\n",
    " ",
    "sk-",
    "sk-ant-api03-",
    "=",
    "&",
    "?api_key=",
    "Authorization: Bearer ",
    "Basic ",
    "xoxb-",
    "-",
    "_",
    "Q~",
    "AccountKey=",
    "A" * 20,
    "1234567890",
    "[masked:jwt]",
]
any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=120)
credential_like_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet=B64URL + "+/=.:@%", max_size=12)),
    max_size=30,
).map("".join)
texts = st.one_of(any_text, credential_like_text)


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@settings(max_examples=200, deadline=None, database=None)
@given(texts)
def test_findings_are_in_range_sorted_and_disjoint(text: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: any text is checked; findings are in range, sorted, disjoint."""
    findings = find_credentials(text)
    previous_end = 0
    for finding in findings:
        assert isinstance(finding.kind, CredentialKind)
        assert finding.length >= 1
        assert finding.start >= previous_end
        previous_end = finding.start + finding.length
    assert previous_end <= len(text)


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@settings(max_examples=200, deadline=None, database=None)
@given(texts)
def test_masking_replaces_exactly_the_found_spans(text: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: masking replaces every found span and keeps all else."""
    findings = find_credentials(text)
    expected, cursor = [], 0
    for finding in findings:
        expected += [text[cursor : finding.start], f"[masked:{finding.kind.value}]"]
        cursor = finding.start + finding.length
    expected.append(text[cursor:])
    assert mask_credentials(text, findings) == "".join(expected)


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@settings(max_examples=200, deadline=None, database=None)
@given(st.sampled_from(ALL_CASES), texts, texts)
def test_a_credential_in_any_surroundings_is_found_and_masked(
    case: Case, before: str, after: str
) -> None:
    """REQ-TEST-013, REQ-PRIV-002: surrounding text never hides a credential from check or mask."""
    text = f"{before} {case.text} {after}"
    value_start = len(before) + 1 + len(case.before)
    value_end = value_start + len(case.value)
    findings = find_credentials(text)
    assert any(f.start <= value_start and value_end <= f.start + f.length for f in findings)
    assert case.value not in mask_credentials(text, findings)
