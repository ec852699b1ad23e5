"""What build.py uses besides the templates: Markdown with MathML, and the static server."""
