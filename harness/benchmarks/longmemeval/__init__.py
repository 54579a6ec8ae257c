"""LongMemEval, in one folder: ``adapter.py`` (one haystack of chat sessions per question, read
from LongMemEval's own file format)."""
