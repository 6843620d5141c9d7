"""The datasets: published files, their parsers and writers, the catalog, derived datasets."""
