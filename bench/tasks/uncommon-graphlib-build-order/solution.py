return list(graphlib.TopologicalSorter(deps).static_order())
