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
    "cli_flag_password": Case(
        K.SECRET_PARAMETER, "mysql -u root --password=", "Zq8" + synthetic(ALNUM, 9, "cli")
    ),
}
ALL_CASES = [*KIND_CASES.values(), *VARIANT_CASES.values()]

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
}


@pytest.mark.req("REQ-PRIV-002", "REQ-SEARCH-006")
@pytest.mark.timeout(10)
@pytest.mark.parametrize("unit", ADVERSARIAL_UNIT.values(), ids=list(ADVERSARIAL_UNIT))
def test_adversarial_100_kb_input_finishes_quickly(unit: str) -> None:
    """REQ-PRIV-002, REQ-SEARCH-006: the pre-request check is linear on hostile 100 KB input."""
    text = unit * (100_000 // len(unit))
    findings = find_credentials(text)
    assert all(f.start >= 0 and f.start + f.length <= len(text) for f in findings)


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
