"""What the configured certificate is: valid now, covering the names, and who can verify it.

`check` and `serve` read the chain before serving (assistant-access: "who
can check its certificate"). A problem names the keys; the start-up line
says who can verify the certificate from the certificate itself: its chain
verified against this host's system trust store (publicly trusted: any
client, including an assistant whose provider makes the connection), or not
(a private CA or self-signed: only clients given that CA).
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import pathlib
import ssl
import warnings
from dataclasses import dataclass

from cryptography import x509
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509 import verification

# A certificate this close to its end is still served, with a warning.
EXPIRY_WARNING_DAYS = 14
_KEYS = "http.tls_cert, http.tls_key"

PUBLIC_WORDS = (
    "the certificate's chain verifies against the system trust store (publicly trusted): "
    "any client can verify it, including an assistant whose provider makes the connection"
)
PRIVATE_WORDS = (
    "the certificate's chain does not verify against the system trust store (a private CA "
    "or self-signed): only clients given that CA can verify it, so an assistant whose "
    "provider makes the connection cannot reach rypsok"
)


@dataclass(frozen=True, slots=True)
class CertificateFacts:
    """What `check` and the start-up log say about the certificate."""

    publicly_trusted: bool
    not_after: datetime.datetime
    problems: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def statement(self) -> str:
        return PUBLIC_WORDS if self.publicly_trusted else PRIVATE_WORDS


def _host_name(entry: str) -> str:
    """The name of an allowed_hosts entry: without its port and IPv6 brackets."""
    if entry.startswith("["):
        return entry[1 : entry.index("]")]
    return entry.rsplit(":", 1)[0] if ":" in entry else entry


def _names(leaf: x509.Certificate) -> tuple[list[str], list[object]]:
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    dns = [name.lower() for name in san.get_values_for_type(x509.DNSName)]
    return dns, list(san.get_values_for_type(x509.IPAddress))


def covers(leaf: x509.Certificate, host: str) -> bool:
    """Whether the certificate's subject alternative names cover `host` (RFC 6125 rules)."""
    dns, addresses = _names(leaf)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = host.lower().rstrip(".")
        for pattern in dns:
            if pattern == name:
                return True
            wildcard = pattern.startswith("*.") and "." in name
            if wildcard and name.split(".", 1)[1] == pattern[2:]:  # one label only
                return True
        return False
    return address in addresses


@functools.cache
def _system_store() -> verification.Store | None:
    """The system's trust anchors, read once (about 150 certificates)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and pathlib.Path(candidate).is_file():
            try:
                with warnings.catch_warnings():
                    # Some distributed roots have a non-positive serial; they still anchor.
                    warnings.simplefilter("ignore", CryptographyDeprecationWarning)
                    certs = x509.load_pem_x509_certificates(pathlib.Path(candidate).read_bytes())
            except ValueError:
                continue
            return verification.Store(certs)
    return None


def _publicly_trusted(chain: list[x509.Certificate], name: str | None) -> bool:
    store = _system_store()
    if store is None or name is None:
        return False
    subject: x509.DNSName | x509.IPAddress
    try:
        subject = x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        subject = x509.DNSName(name)
    verifier = verification.PolicyBuilder().store(store).build_server_verifier(subject)
    try:
        verifier.verify(chain[0], chain[1:])
    except (verification.VerificationError, ValueError):
        return False
    return True


def inspect(
    cert_file: str,
    names: tuple[str, ...],
    configured: bool,
    now: datetime.datetime | None = None,
) -> CertificateFacts:
    """Read the chain in `cert_file` and judge it for the Host names clients use.

    With `configured` (the operator listed allowed_hosts) every name must be
    covered; with names derived from the bind, at least one (a loopback bind
    lists three spellings of the same host, and a certificate names one or two).
    """
    moment = now or datetime.datetime.now(datetime.UTC)
    try:
        chain = x509.load_pem_x509_certificates(pathlib.Path(cert_file).read_bytes())
    except (OSError, ValueError):
        problem = f"{_KEYS}: the certificate file holds no PEM certificate"
        return CertificateFacts(False, moment, (problem,), ())
    leaf = chain[0]
    problems: list[str] = []
    warnings: list[str] = []
    if leaf.not_valid_after_utc <= moment:
        problems.append(
            f"http.tls_cert: the certificate expired on {leaf.not_valid_after_utc:%Y-%m-%d}; "
            "renew it"
        )
    elif leaf.not_valid_before_utc > moment:
        problems.append(
            "http.tls_cert: the certificate is not valid before "
            f"{leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
        )
    elif leaf.not_valid_after_utc - moment < datetime.timedelta(days=EXPIRY_WARNING_DAYS):
        warnings.append(
            f"http.tls_cert: the certificate expires on {leaf.not_valid_after_utc:%Y-%m-%d}, "
            f"within {EXPIRY_WARNING_DAYS} days"
        )
    hosts = [_host_name(entry) for entry in names]
    uncovered = [host for host in hosts if not covers(leaf, host)]
    if hosts and (uncovered if configured else len(uncovered) == len(hosts)):
        problems.append(
            "http.tls_cert, http.allowed_hosts: the certificate's names do not cover "
            + ", ".join(uncovered)
        )
    first_covered = next((host for host in hosts if covers(leaf, host)), None)
    trusted = not problems and _publicly_trusted(chain, first_covered)
    return CertificateFacts(trusted, leaf.not_valid_after_utc, tuple(problems), tuple(warnings))
