"""medgate: a quality gate for autonomous medical-AI research agents."""

__version__ = "0.1.0"
