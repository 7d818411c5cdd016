"""The exact language: its grammar (grammar), sentences packed into the models' 33-position
documents (documents), and the toy language whose every probability is known (toylang).

What the notebooks use is re-exported here."""

from helpers.language.grammar import Grammar
from helpers.language.toylang import LANG, CountingLanguage, ToyLanguage

__all__ = ["LANG", "CountingLanguage", "Grammar", "ToyLanguage"]
