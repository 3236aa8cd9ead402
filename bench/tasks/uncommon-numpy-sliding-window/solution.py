windows = np.lib.stride_tricks.sliding_window_view(values, window)
    return windows.max(axis=1)
