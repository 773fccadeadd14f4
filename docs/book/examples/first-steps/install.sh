python3 -m venv ~/.local/share/rypsok
~/.local/share/rypsok/bin/pip install --no-index --find-links ./offline-linux-x86_64-py3.11 rypsok
mkdir -p ~/.local/bin && ln -sf ~/.local/share/rypsok/bin/rypsok ~/.local/bin/rypsok
rypsok --version
rypsok check
