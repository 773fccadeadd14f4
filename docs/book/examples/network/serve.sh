python3 -c "import secrets; print(secrets.token_urlsafe(32))" > /run/secrets/rypsok-key-research
chmod 600 /run/secrets/rypsok-key-research
rypsok check --config rypsok.toml
rypsok serve --transport http --config rypsok.toml
