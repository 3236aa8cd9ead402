"""The ChatLSP benchmark: labelled cursor positions in a small project, and their runner."""
