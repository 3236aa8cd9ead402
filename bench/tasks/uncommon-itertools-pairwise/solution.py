return [later - earlier for earlier, later in itertools.pairwise(readings)]
