env_entries = {
        name[len(ENV_PREFIX) :].lower(): value
        for name, value in environ.items()
        if name.startswith(ENV_PREFIX)
    }
    return Settings.merged(
        read_layer(shipped, origin=Origin.SHIPPED_DEFAULT),
        read_layer(site_file, origin=Origin.SITE_FILE),
        Layer(origin=Origin.ENV_OVERRIDE, entries=env_entries),
        read_layer("\n".join(cli_pairs), origin=Origin.COMMAND_LINE),
    )
