import CAllocCounter
print(tributary_alloc_count())
