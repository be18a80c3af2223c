"""Bearer-token verification for the HTTP transport, on FastMCP's TokenVerifier interface.

- One static token (`--token` / `MCP_TOKEN`) and per-subject API keys
  (`--api-key SUBJECT=TOKEN`): compared with `hmac.compare_digest` against every
  configured key (no early exit), so timing does not reveal which prefix matched.
- JWT with PyJWT: exactly one algorithm is accepted, the one the operator's key implies
  (HS256 for `--jwt-secret`; RS256/ES256/... for a public key or JWKS). The header's
  `alg` must equal it before anything else happens, which rules out `none` and the
  HS/RS confusion (a token "signed" with the public key as an HMAC secret). `exp` and
  `sub` are required, `nbf`/`iat` honoured, with a small leeway; the audience is
  mandatory (the MCP specification forbids accepting tokens minted for another server).

Tokens never reach a log line; a verifier that rejects returns None and FastMCP answers
401 with `WWW-Authenticate: Bearer`.
"""

from __future__ import annotations

import hmac
import logging

import jwt
from fastmcp.server.auth import AccessToken, AuthProvider, TokenVerifier

from ..configuration import PROG, base_url
from ..core import handoff
from ..core.errors import ConfigError
from ..core.limits import JWKS_CACHE_SECONDS, JWKS_FETCH_SECONDS, JWT_LEEWAY_SECONDS
from ..settings import Settings

log = logging.getLogger("agent_workspace_mcp")

ASYMMETRIC = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class KeyVerifier(TokenVerifier):
    """Static bearer tokens, each belonging to a subject."""

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self._keys = [(subject, token.encode()) for subject, token in keys]

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = token.encode()
        match = None
        for subject, secret in self._keys:  # no early exit: constant work per request
            if hmac.compare_digest(presented, secret) and match is None:
                match = subject
        if match is None:
            return None
        return AccessToken(
            token=token, client_id=match, scopes=[], subject=match, claims={"sub": match}
        )


class JwtVerifier(TokenVerifier):
    def __init__(
        self,
        *,
        audience: str,
        issuer: str | None = None,
        secret: str | None = None,
        public_key: str | None = None,
        jwks_url: str | None = None,
        algorithm: str | None = None,
    ) -> None:
        # The option combinations were checked by configuration.preflight().
        super().__init__()
        self.audience = audience
        self.issuer = issuer
        self._jwks = None
        if secret is not None:
            self.algorithm = algorithm or "HS256"
            self._key: object = secret
        elif public_key is not None:
            self._key, implied = _load_public_key(public_key)
            self.algorithm = algorithm or implied
        elif jwks_url is not None:
            self._key = None
            self._jwks = jwt.PyJWKClient(
                jwks_url,
                cache_keys=True,
                lifespan=JWKS_CACHE_SECONDS,
                timeout=int(JWKS_FETCH_SECONDS),
            )
            self.algorithm = algorithm or "RS256"
        else:
            raise ConfigError("JWT auth needs --jwt-secret, --jwt-public-key or --jwks-url")
        if self.algorithm not in ASYMMETRIC and secret is None:
            raise ConfigError(
                f"JWT algorithm {self.algorithm} needs a public key algorithm "
                f"({', '.join(ASYMMETRIC)})"
            )

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") != self.algorithm:
                return None
            key = self._key
            jwks = self._jwks
            if jwks is not None:
                key = (await handoff.run_sync(lambda: jwks.get_signing_key_from_jwt(token))).key
            required = ["exp", "sub", "aud"] + (["iss"] if self.issuer else [])
            claims = jwt.decode(
                token,
                key,  # type: ignore[arg-type]
                algorithms=[self.algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=JWT_LEEWAY_SECONDS,
                options={"require": required},
            )
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            log.info("JWT rejected: %s", type(exc).__name__)
            return None
        subject = str(claims["sub"])
        scopes = claims.get("scope", "")
        return AccessToken(
            token=token,
            client_id=subject,
            scopes=scopes.split() if isinstance(scopes, str) else list(scopes or []),
            expires_at=int(claims["exp"]),
            subject=subject,
            claims=claims,
        )


def _load_public_key(path: str) -> tuple[object, str]:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        with open(path, "rb") as handle:
            key = load_pem_public_key(handle.read())
    except OSError as exc:
        raise ConfigError(f"--jwt-public-key {path} cannot be read ({exc.strerror})") from None
    except ValueError:
        raise ConfigError(f"--jwt-public-key {path} is not a PEM public key") from None
    if isinstance(key, rsa.RSAPublicKey):
        return key, "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return key, {256: "ES256", 384: "ES384", 521: "ES512"}.get(key.curve.key_size, "ES256")
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key, "EdDSA"
    raise ConfigError(f"--jwt-public-key {path}: unsupported key type")


class AnyOf(TokenVerifier):
    """The first verifier that accepts the token wins."""

    def __init__(self, verifiers: list[TokenVerifier]) -> None:
        super().__init__()
        self._verifiers = verifiers

    async def verify_token(self, token: str) -> AccessToken | None:
        for verifier in self._verifiers:
            found = await verifier.verify_token(token)
            if found is not None:
                return found
        return None


def build_auth(settings: Settings) -> TokenVerifier | AuthProvider:
    """What FastMCP checks every HTTP request with: the static token and API keys, a JWT
    verifier, or any of them; behind an RFC 9728 provider when --auth-server is given.
    (The caller asks only for an HTTP server with auth.)"""
    verifiers: list[TokenVerifier] = []
    keys = list(settings.api_keys)
    if settings.token:
        keys.insert(0, ("token", settings.token))
    if keys:
        verifiers.append(KeyVerifier(keys))
    if settings.jwt_secret or settings.jwt_public_key or settings.jwks_url:
        verifiers.append(
            JwtVerifier(
                audience=settings.jwt_audience or "",
                issuer=settings.jwt_issuer,
                secret=settings.jwt_secret,
                public_key=settings.jwt_public_key,
                jwks_url=settings.jwks_url,
                algorithm=settings.jwt_algorithm,
            )
        )
    verifier = verifiers[0] if len(verifiers) == 1 else AnyOf(verifiers)
    if settings.auth_server:
        from fastmcp.server.auth import RemoteAuthProvider
        from pydantic import AnyHttpUrl

        return RemoteAuthProvider(
            token_verifier=verifier,
            authorization_servers=[AnyHttpUrl(settings.auth_server)],
            base_url=base_url(settings),
            resource_name=PROG,
        )
    return verifier
