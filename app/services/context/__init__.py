"""The context loader: one scope's best memory packed as Markdown into a token budget
(loader), entries' ranking (ranking, fusion), raw events ranked for a question (evidence)
and cut to the passages that answer it (passages), the time a question names
(time_phrases), and how items are written (markdown)."""
