"""The rules of the credential check, most specific first.

The first rule of merged candidates names the kind. Every pattern starts at a
literal or behind a boundary that a run of its own characters cannot satisfy,
and repeats only through possessive or unambiguous quantifiers (linear scans).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rypsok.core.privacy.extractors import (
    Extractor,
    credential_header,
    discord_bot_token,
    generated_parameter,
    grafana,
    jwt,
    mailgun,
    named_value,
    new_relic,
    notion,
    private_key_block,
    secret_parameter,
    sentry,
    square,
    token,
    url_userinfo,
)
from rypsok.core.privacy.kinds import CredentialKind

# Not inside a longer token: a credential does not continue a word or a base64 blob.
_S = r"(?<![A-Za-z0-9_-])"
_END_ALNUM = r"(?![A-Za-z0-9])"
_END_B64URL = r"(?![A-Za-z0-9_-])"
_END_B64 = r"(?![A-Za-z0-9+/=])"
_NOT_IN_HOST = r"(?<![A-Za-z0-9.-])"
_PEM_LABEL = r"(?:[A-Z0-9]{1,16}[ +]){0,3}PRIVATE[ +]KEY(?:[ +]BLOCK)?"
_PEM_LINE_BREAK = r"(?:\s|\\[nr])*+"
_FIELD_SEPARATOR = r"[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?"
# A parameter value ends at the next `&`, `#`, `;`, `?`, `=` (base64 padding excepted)
# or blank (`?` starts the query after a path parameter: `;jsessionid=…?page=2`); one
# that opens with a quote ends at the next quote too (`api_key='…')`), and the quotes
# belong to the syntax, not to the secret.
_PARAMETER_VALUE = (
    r"(?:[\"'`](?P<quoted>[^&#;?\s=\"'`]{1,2048}+={0,2})|(?P<value>[^&#;?\s=]{1,2048}+={0,2}))"
)


@dataclass(frozen=True, slots=True)
class Rule:
    kind: CredentialKind
    pattern: re.Pattern[str]
    extract: Extractor


def _rule(kind: CredentialKind, pattern: str, extract: Extractor, flags: int = 0) -> Rule:
    return Rule(kind, re.compile(pattern, flags), extract)


_K = CredentialKind
RULES: tuple[Rule, ...] = (
    _rule(_K.AWS_ACCESS_KEY_ID, _S + r"(?:AKIA|ASIA)(?P<body>[A-Z2-7]{16})" + _END_ALNUM, token()),
    _rule(_K.GCP_API_KEY, _S + r"AIza(?P<body>[0-9A-Za-z_-]{35})" + _END_B64URL, token()),
    _rule(
        _K.GOOGLE_OAUTH_CLIENT_SECRET,
        _S + r"GOCSPX-(?P<body>[0-9A-Za-z_-]{28})" + _END_B64URL,
        token(),
    ),
    _rule(
        _K.GOOGLE_OAUTH_ACCESS_TOKEN,
        _S + r"ya29\.(?P<body>[0-9A-Za-z_-]{30,2048}+)" + _END_B64URL,
        token(),
    ),
    _rule(_K.GITHUB_TOKEN, _S + r"gh[pousr]_(?P<body>[A-Za-z0-9]{36,251}+)" + _END_ALNUM, token()),
    _rule(
        _K.GITHUB_TOKEN,
        _S + r"github_pat_(?P<body>[A-Za-z0-9]{22}_[A-Za-z0-9]{59,80}+)" + _END_ALNUM,
        token(),
    ),
    _rule(
        _K.GITLAB_TOKEN,
        _S
        + r"(?:glpat|gldt|glrt|glptt|glsoat|glcbt|glimt|glffct|glagent|gloas)-"
        + r"(?P<body>[0-9A-Za-z_-]{20,255}+(?:\.[0-9A-Za-z_-]{1,32}+){0,2}+)"
        + _END_B64URL,
        token(),
    ),
    _rule(
        _K.SLACK_WEBHOOK_URL,
        _NOT_IN_HOST
        + r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/"
        + r"(?P<body>T[0-9A-Z]{6,12}+(?:/[0-9A-Za-z]{6,64}+){2,3}+)"
        + _END_ALNUM,
        token(),
    ),
    _rule(
        _K.SLACK_TOKEN,
        _S
        + r"(?:xox[abprs]|xoxe(?:\.xox[abprs])?|xapp)-"
        + r"(?P<body>[0-9]{1,20}+(?:-[0-9A-Za-z]{1,128}+){2,8}+)"
        + r"(?![A-Za-z0-9_])",
        token(),
    ),
    _rule(
        _K.DISCORD_WEBHOOK_URL,
        _NOT_IN_HOST
        + r"(?:https?://)?(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v[0-9]{1,2})?"
        + r"/webhooks/[0-9]{17,20}/(?P<body>[A-Za-z0-9_-]{60,80}+)"
        + _END_B64URL,
        token(),
    ),
    _rule(
        _K.DISCORD_BOT_TOKEN,
        _S
        + r"(?P<id>[MNO][A-Za-z0-9_-]{22,26}+)\.[A-Za-z0-9_-]{6}\.(?P<body>[A-Za-z0-9_-]{27,40}+)"
        + _END_B64URL,
        discord_bot_token,
    ),
    _rule(
        _K.TELEGRAM_BOT_TOKEN,
        r"(?<![0-9])[0-9]{8,10}:(?P<body>AA[A-Za-z0-9_-]{33})" + _END_B64URL,
        token(),
    ),
    _rule(
        _K.STRIPE_KEY,
        _S + r"(?:sk|rk)_(?:live|test)_(?P<body>[0-9A-Za-z]{16,247}+)" + _END_ALNUM,
        token(),
    ),
    _rule(
        _K.ANTHROPIC_API_KEY,
        _S + r"sk-ant-[a-z]{2,8}[0-9]{2}-(?P<body>[A-Za-z0-9_-]{32,400}+)" + _END_B64URL,
        token(),
    ),
    _rule(_K.OPENROUTER_API_KEY, _S + r"sk-or-v1-(?P<body>[0-9a-f]{64})" + _END_ALNUM, token()),
    _rule(
        _K.OPENAI_API_KEY,
        _S + r"sk-(?:proj|svcacct|admin)-(?P<body>[A-Za-z0-9_-]{20,400}+)" + _END_B64URL,
        token(),
    ),
    # The legacy form has no marker of its own beyond "sk-" and its exact length,
    # so it must also look random: both cases and a digit.
    _rule(
        _K.OPENAI_API_KEY,
        _S + r"sk-(?P<body>[A-Za-z0-9]{48})" + _END_ALNUM,
        token(both_cases=True, digit=True),
    ),
    _rule(
        _K.HUGGINGFACE_TOKEN,
        _S + r"(?:hf|api_org)_(?P<body>[A-Za-z0-9]{34,64}+)" + _END_ALNUM,
        token(both_cases=True),
    ),
    _rule(_K.GROQ_API_KEY, _S + r"gsk_(?P<body>[A-Za-z0-9]{52})" + _END_ALNUM, token()),
    _rule(_K.XAI_API_KEY, _S + r"xai-(?P<body>[A-Za-z0-9]{80})" + _END_ALNUM, token()),
    _rule(_K.REPLICATE_API_TOKEN, _S + r"r8_(?P<body>[A-Za-z0-9]{37})" + _END_ALNUM, token()),
    _rule(_K.NPM_TOKEN, _S + r"npm_(?P<body>[A-Za-z0-9]{36})" + _END_ALNUM, token()),
    _rule(
        _K.PYPI_TOKEN,
        _S
        + r"pypi-(?P<body>AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,4096}+)"
        + _END_B64URL,
        token(),
    ),
    _rule(
        _K.SENDGRID_API_KEY,
        _S + r"SG\.(?P<body>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})" + _END_B64URL,
        token(),
    ),
    _rule(
        _K.SHOPIFY_TOKEN,
        _S + r"shp(?:at|ca|pa|ss)_(?P<body>[a-fA-F0-9]{32})" + _END_ALNUM,
        token(),
    ),
    _rule(_K.DIGITALOCEAN_TOKEN, _S + r"do[opr]_v1_(?P<body>[a-f0-9]{64})" + _END_ALNUM, token()),
    _rule(
        _K.DOCKERHUB_TOKEN,
        _S + r"dckr_pat_(?P<body>[A-Za-z0-9_-]{27,64}+)" + _END_B64URL,
        token(),
    ),
    _rule(
        _K.VAULT_TOKEN,
        _S + r"hv[sbr]\.(?P<body>[A-Za-z0-9_-]{24,512}+)" + _END_B64URL,
        token(both_cases=True, digit=True),
    ),
    _rule(
        _K.MAILGUN_API_KEY,
        _S
        + r"(?:key-(?P<body>[0-9a-f]{32})|(?P<hex>[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}))"
        + _END_ALNUM,
        mailgun,
    ),
    _rule(
        _K.SQUARE_TOKEN,
        _S
        + r"(?:sq0atp-(?P<body>[0-9A-Za-z_-]{22})|sq0csp-(?P<secret>[0-9A-Za-z_-]{43})"
        + r"|EAAA(?P<access>[0-9A-Za-z_-]{60}))"
        + _END_B64URL,
        square,
    ),
    _rule(
        _K.DATABRICKS_TOKEN,
        _S + r"dapi(?P<body>[0-9a-f]{32})(?:-[0-9])?" + _END_ALNUM,
        token(digit=True),
    ),
    _rule(
        _K.LINEAR_API_KEY,
        _S + r"lin_api_(?P<body>[A-Za-z0-9]{40})" + _END_ALNUM,
        token(both_cases=True, digit=True),
    ),
    # Linear's OAuth access tokens carry their own prefix and 64 hex digits.
    _rule(
        _K.LINEAR_API_KEY,
        _S + r"lin_oauth_(?P<body>[0-9a-f]{64})" + _END_ALNUM,
        token(digit=True),
    ),
    _rule(
        _K.DOPPLER_TOKEN,
        _S
        + r"dp\.(?:pt|ct|sa|scim|audit|st(?:\.[a-z0-9_-]{2,35}+)?)\."
        + r"(?P<body>[A-Za-z0-9]{40,44}+)"
        + _END_ALNUM,
        token(both_cases=True, digit=True),
    ),
    _rule(
        _K.POSTMAN_API_KEY,
        _S + r"PMAK-(?P<body>[0-9a-fA-F]{24}-[0-9a-fA-F]{34})" + _END_ALNUM,
        token(digit=True),
    ),
    _rule(
        _K.ATLASSIAN_API_TOKEN,
        # ATATT: a user's API token; ATCTT: an organization admin API key.
        _S + r"AT[AC]TT3(?P<body>[A-Za-z0-9_=-]{150,250}+)" + r"(?![A-Za-z0-9_=-])",
        token(both_cases=True, digit=True),
    ),
    # A Bitbucket app password, Atlassian's other prefixed secret.
    _rule(
        _K.ATLASSIAN_API_TOKEN,
        _S + r"ATBB(?P<body>[A-Za-z0-9]{32})" + _END_ALNUM,
        token(both_cases=True, digit=True),
    ),
    _rule(
        _K.PERPLEXITY_API_KEY,
        _S + r"pplx-(?P<body>[A-Za-z0-9]{48})" + _END_ALNUM,
        token(both_cases=True, digit=True),
    ),
    _rule(
        _K.GRAFANA_TOKEN,
        _S
        + r"(?:glsa_(?P<body>[A-Za-z0-9]{32}_[0-9a-fA-F]{8})"
        + r"|glc_(?P<cloud>eyJ[A-Za-z0-9+/]{29,400}+={0,2}))"
        + _END_B64,
        grafana,
    ),
    _rule(
        _K.SENTRY_TOKEN,
        _S
        + r"(?:sntryu_(?P<body>[0-9a-f]{64})"
        + r"|sntrys_(?P<org>eyJpYXQiO[A-Za-z0-9+/]{10,400}+={0,2}_[A-Za-z0-9+/]{43}))"
        + _END_B64,
        sentry,
    ),
    # A Twilio SID (AC account, SK API key) is an identifier; written with its
    # secret after a colon (`curl -u AC…:…`), the pair is a credential.
    _rule(
        _K.TWILIO_CREDENTIAL,
        _S + r"(?:AC|SK)[0-9a-f]{32}:(?P<body>[0-9A-Za-z]{32})" + _END_ALNUM,
        token(digit=True),
    ),
    _rule(
        _K.NOTION_TOKEN,
        _S
        + r"(?:ntn_[0-9]{11}(?P<body>[A-Za-z0-9]{35})|secret_(?P<legacy>[A-Za-z0-9]{43}))"
        + _END_ALNUM,
        notion,
    ),
    _rule(
        _K.WEBHOOK_SIGNING_SECRET,
        _S + r"whsec_(?P<body>[A-Za-z0-9+/]{32,88}+={0,2})" + _END_B64,
        token(both_cases=True, digit=True),
    ),
    _rule(
        _K.NEW_RELIC_KEY,
        _S
        + r"(?:NRAK-(?P<body>[A-Z0-9]{27})|NRII-(?P<insert>[A-Za-z0-9_-]{32})"
        + r"|(?P<license>[0-9a-f]{36}|[a-z]{2}[0-9]{2}xx[0-9a-f]{30})NRAL)"
        + _END_B64URL,
        new_relic,
    ),
    _rule(
        _K.AZURE_STORAGE_ACCOUNT_KEY,
        r"(?<![A-Za-z0-9])(?i:AccountKey)=(?P<value>[A-Za-z0-9+/]{86}==)" + _END_B64,
        named_value,
    ),
    _rule(
        _K.AZURE_SHARED_ACCESS_KEY,
        r"(?<![A-Za-z0-9])(?i:SharedAccessKey)=(?P<value>[A-Za-z0-9+/]{43}=)" + _END_B64,
        named_value,
    ),
    _rule(
        _K.AZURE_AD_CLIENT_SECRET,
        r"(?<![A-Za-z0-9_~.-])(?P<body>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}+)"
        + r"(?![A-Za-z0-9_~.-])",
        token(),
    ),
    _rule(
        _K.AWS_SECRET_ACCESS_KEY,
        r"(?<![A-Za-z0-9])(?:aws[_-]?)?secret[_-]?access[_-]?key"
        + _FIELD_SEPARATOR
        + r"(?P<value>[A-Za-z0-9/+]{40})"
        + _END_B64,
        named_value,
        re.IGNORECASE,
    ),
    _rule(
        _K.PRIVATE_KEY,
        r"-----BEGIN[ +]"
        + _PEM_LABEL
        + r"-----"
        # Armor headers of encrypted PEM and PGP blocks (Proc-Type, DEK-Info, Version).
        + r"(?:"
        + _PEM_LINE_BREAK
        + r"[A-Za-z][A-Za-z-]{0,30}+:[ \t][^\r\n\\]{1,100}+){0,4}"
        + r"(?P<body>(?:"
        + _PEM_LINE_BREAK
        + r"[A-Za-z0-9+/=]++)*+)"
        + r"(?:"
        + _PEM_LINE_BREAK
        + r"-----END[ +]"
        + _PEM_LABEL
        + r"-----)?",
        private_key_block,
    ),
    # A PuTTY key file: its private part follows `Private-Lines: N` (PPK versions
    # 2 and 3); the public part before it is not secret.
    _rule(
        _K.PRIVATE_KEY,
        # Not inside a word, but right after a `\n` escape too: a key file pasted as one
        # JSON string.
        r"(?<!(?<!\\)[A-Za-z0-9-])Private-Lines:[ \t]*+[0-9]{1,4}+"
        + r"(?P<body>(?:"
        + _PEM_LINE_BREAK
        + r"[A-Za-z0-9+/=]++(?![-:]))*+)",
        private_key_block,
    ),
    _rule(
        _K.PRIVATE_KEY,
        r"(?<![A-Za-z0-9-])AGE-SECRET-KEY-1(?P<body>[0-9A-Z]{58})" + _END_ALNUM,
        token(),
    ),
    _rule(
        _K.JWT,
        _S + r"eyJ[A-Za-z0-9_-]{8,}+(?:\.[A-Za-z0-9_-]*+){2,4}+",
        jwt,
    ),
    _rule(
        _K.CREDENTIAL_HEADER,
        r"(?<![A-Za-z0-9-])(?:proxy-)?authorization"
        + _FIELD_SEPARATOR
        + r"(?P<scheme>bearer|basic|token|bot)[ +]{1,4}"
        + r"(?P<value>[A-Za-z0-9._~+/=-]{12,4096}+)",
        credential_header,
        re.IGNORECASE,
    ),
    _rule(
        _K.CREDENTIAL_HEADER,
        r"(?<![A-Za-z0-9-])(?:x-api-key|api-key|x-auth-token|private-token|x-goog-api-key)"
        + r"[\"']?[ \t]{0,4}:[ \t]{0,4}[\"']?"
        + r"(?P<value>[A-Za-z0-9._~+/=-]{12,4096}+)",
        credential_header,
        re.IGNORECASE,
    ),
    _rule(
        _K.URL_USERINFO,
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}+://(?P<authority>[^\s/?#\\]{1,2048}+)",
        url_userinfo,
    ),
    # Query parameters, connection-string fields and `--flag=` values named as secrets.
    # A value ends at the next `=` except for base64 padding, so no value can hold the
    # start of another candidate and the scan stays linear.
    _rule(
        _K.SECRET_PARAMETER,
        r"(?<![A-Za-z0-9])(?:pass(?:word|wd)?|client[_-]?secret|api[_-]?key|access[_-]?token"
        + r"|refresh[_-]?token|auth[_-]?token|private[_-]?token|secret[_-]?key|app[_-]?secret"
        + r"|(?<=;)pwd)="
        + _PARAMETER_VALUE,
        secret_parameter,
        re.IGNORECASE,
    ),
    # Broad names (`token=`, `key=`, `sig=` of an Azure SAS, `X-Amz-Signature=`): the
    # whole parameter name, after `?`, `&`, `#`, `;`, a blank, a quote or `--`, and a value
    # that must look generated, since such names also carry words and ids.
    _rule(
        _K.SECRET_PARAMETER,
        r"(?<![^?&#;\s\"'])(?:--)?+(?P<name>(?:x-(?:amz|goog)-)?(?:"
        + r"(?:access|auth|id|session|security|bearer|api|private|refresh|oauth)?[_-]?token"
        + r"|(?:api|access|auth|secret|private|session|subscription|license)?[_-]?key"
        + r"|(?:client|api|app|consumer|shared)?[_-]?secret"
        + r"|pass(?:word|wd)?|auth|sig|signature|apikey|apitoken"
        # Session identifiers in URLs are bearer credentials (`;jsessionid=`, `PHPSESSID=`).
        + r"|(?:j|php|asp[_.]net[_-])?sess(?:ion)?[_-]?id))"
        + r"="
        + _PARAMETER_VALUE,
        generated_parameter,
        re.IGNORECASE,
    ),
)
