return statistics.correlation(xs, ys)
