export BRAVE_API_KEY="$(cat ~/.config/rypsok/brave-api-key)"
rypsok check --config ~/.config/rypsok/rypsok.toml
