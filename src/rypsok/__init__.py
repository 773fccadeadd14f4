"""rypsok: headless meta-search and safe page fetching for AI agents."""

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/rypsok/rypsok"
