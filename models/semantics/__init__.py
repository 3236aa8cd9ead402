"""What the code at a cursor means, read statically: the hole (``hole.py``), the type the
expression there must have (``expected.py``) and annotation text (``typetext.py``).

Shared by ChatLSP's methods (``server/chatlsp/semantics/``, which add Jedi through a
``Lookup``) and by steering's ranking, which reads the expected type without Jedi.
Nothing here imports the server.
"""
