make dist         # wheel, sdist, offline bundle, SHA256SUMS in dist/
make dist-check   # builds the wheel and the sdist twice and compares the bytes
make image        # the image archive (root, mmdebstrap), added to SHA256SUMS
