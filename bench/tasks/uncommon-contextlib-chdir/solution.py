with contextlib.chdir(path):
        return step()
