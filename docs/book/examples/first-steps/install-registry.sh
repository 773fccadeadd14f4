pipx install rypsok                  # puts the command `rypsok` on your PATH
uvx --from rypsok rypsok --version   # or run it without installing (uv)
uvx --from ./rypsok-0.1.0-py3-none-any.whl rypsok --version   # the same, from the wheel file
