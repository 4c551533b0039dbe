"""The console at /console: its routes (routes) and its page, scripts and styles (the files
beside them, served as they are)."""
