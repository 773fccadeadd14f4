~/.local/share/rypsok/bin/python first_search.py claude_desktop_config.json "quantum error correction"
