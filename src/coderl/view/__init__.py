"""`coderl view RUN_DIR`: a run's per-sample records as ONE self-contained HTML page (`reader`
finds and reads what is there, `page` writes the file, `static/` holds the page's JS and CSS)."""
