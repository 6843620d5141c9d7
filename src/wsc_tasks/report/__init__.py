"""``wsc-tasks report``: the sections, their bootstraps, and the files (Markdown, HTML, tables,
figures) they are written to; also the summary of one results file and the README's blocks."""
