bisect.insort(queue, job, key=lambda queued: queued.priority)
