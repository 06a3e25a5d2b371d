"""The Rust engine of interlab (PyO3). Strings in, strings out: results.csv text, JSON."""
from typing import List, Optional, Tuple

VERSION: str

class InterlabError(Exception):
    """An interlab error: the message is the CLI's."""

class SpecError(InterlabError):
    """A spec or profile error, named by file and key as the CLI names it."""
    file: str
    key: str
    message: str

class UsageError(InterlabError):
    """Bad input that is not a file/key error (an unknown study, an unreadable file)."""

class RunError(InterlabError):
    """The model could not run a point."""

def run_model(file: str, text: str, base: Optional[str] = None) -> str:
    """Runs TOML spec `text` (named `file`; profile paths relative to `base`) on the model; results.csv text."""
def run_engine(
    file: str, text: str, base: Optional[str], engine: str, peers: List[str],
    auth_token: Optional[str] = None, connect_timeout_s: float = 5.0,
) -> Tuple[str, List[str]]:
    """Runs on engine model|live|both: (results.csv text, failed live points)."""
def toml_of_json(file: str, json: str) -> str:
    """TOML text of a spec given as JSON."""
def check(file: str, text: str, base: Optional[str] = None) -> Tuple[str, int, int]:
    """Parses a spec: (experiment name, series, points)."""
def run_batch(specs: List[Tuple[str, str, Optional[str]]]) -> List[Tuple[bool, str, str]]:
    """Runs JSON specs [(file, json, base)] in parallel: [(ok, results.csv text or error, kind)]."""
def profiles() -> List[Tuple[str, str]]:
    """Built-in profiles: [(id, description)]."""
def profile(id_or_path: str) -> Tuple[str, str, str]:
    """(id, description, the profile's tables as JSON)."""
def reproduce(studies: List[str], out: str) -> None:
    """`interlab reproduce --study ... --out OUT` (empty list: every study)."""
