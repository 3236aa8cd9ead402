return attrs.evolve(policy, attempts=attempts)
