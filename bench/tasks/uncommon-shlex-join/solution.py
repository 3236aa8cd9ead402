return f"({cwd}) $ {shlex.join(argv)}"
