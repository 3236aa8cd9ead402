return float(np.trapezoid(power_w, x=timestamps_s)) / JOULES_PER_KWH
