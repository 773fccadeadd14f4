"""The credential check's vocabulary: the operator's modes, the kinds, a finding."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class CredentialMode(enum.StrEnum):
    """What the operator lets the caller do with a finding (LIM-P1)."""

    DENY = "deny"
    WARN = "warn"
    MASK = "mask"
    OFF = "off"


class CredentialKind(enum.StrEnum):
    """The fixed vocabulary of detected formats, one name per format (CLR-6).

    Each value is the member's name in lower case (`github_token`); callers show it.
    """

    AWS_ACCESS_KEY_ID = enum.auto()
    AWS_SECRET_ACCESS_KEY = enum.auto()
    GCP_API_KEY = enum.auto()
    GOOGLE_OAUTH_CLIENT_SECRET = enum.auto()
    GOOGLE_OAUTH_ACCESS_TOKEN = enum.auto()
    AZURE_STORAGE_ACCOUNT_KEY = enum.auto()
    AZURE_SHARED_ACCESS_KEY = enum.auto()
    AZURE_AD_CLIENT_SECRET = enum.auto()
    GITHUB_TOKEN = enum.auto()
    GITLAB_TOKEN = enum.auto()
    SLACK_TOKEN = enum.auto()
    SLACK_WEBHOOK_URL = enum.auto()
    DISCORD_BOT_TOKEN = enum.auto()
    DISCORD_WEBHOOK_URL = enum.auto()
    TELEGRAM_BOT_TOKEN = enum.auto()
    STRIPE_KEY = enum.auto()
    OPENAI_API_KEY = enum.auto()
    ANTHROPIC_API_KEY = enum.auto()
    HUGGINGFACE_TOKEN = enum.auto()
    GROQ_API_KEY = enum.auto()
    XAI_API_KEY = enum.auto()
    REPLICATE_API_TOKEN = enum.auto()
    OPENROUTER_API_KEY = enum.auto()
    NPM_TOKEN = enum.auto()
    PYPI_TOKEN = enum.auto()
    SENDGRID_API_KEY = enum.auto()
    SHOPIFY_TOKEN = enum.auto()
    DIGITALOCEAN_TOKEN = enum.auto()
    DOCKERHUB_TOKEN = enum.auto()
    VAULT_TOKEN = enum.auto()
    MAILGUN_API_KEY = enum.auto()
    SQUARE_TOKEN = enum.auto()
    DATABRICKS_TOKEN = enum.auto()
    LINEAR_API_KEY = enum.auto()
    DOPPLER_TOKEN = enum.auto()
    POSTMAN_API_KEY = enum.auto()
    ATLASSIAN_API_TOKEN = enum.auto()
    PERPLEXITY_API_KEY = enum.auto()
    GRAFANA_TOKEN = enum.auto()
    SENTRY_TOKEN = enum.auto()
    TWILIO_CREDENTIAL = enum.auto()
    NOTION_TOKEN = enum.auto()
    WEBHOOK_SIGNING_SECRET = enum.auto()
    NEW_RELIC_KEY = enum.auto()
    PRIVATE_KEY = enum.auto()
    JWT = enum.auto()
    URL_USERINFO = enum.auto()
    CREDENTIAL_HEADER = enum.auto()
    SECRET_PARAMETER = enum.auto()


@dataclass(frozen=True, slots=True)
class CredentialFinding:
    """Where a credential is, in Unicode scalar values (LIM-U1); never what it is."""

    kind: CredentialKind
    start: int
    length: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.length < 1:
            raise ValueError("a finding starts at 0 or later and is at least 1 character long")


# What a masked value becomes: `[masked:<kind>]`.
MASK_OPENING = "[masked:"
