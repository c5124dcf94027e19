"""Static caps on the Params that scale work (docs/bad_input.md, "Param bounds and model loading"):
one definition for the Spark selectors (:mod:`sparkfs.selectors._params`) and the scikit-learn front."""

# Static caps on the Params that scale work (docs/bad_input.md, "Param bounds and model loading").
# Each is far above any published use, and low enough that a run at the cap still ends.
#: Solver iterations per SVM fit (SVM-RFE's maxIter): liblinear's default is 1,000, ours 10,000.
MAX_SOLVER_ITERATIONS = 1_000_000
#: Descent / fuzzy c-means iterations (Parzen-ISE's maxIter, fcmMaxIter): defaults 100 and 300;
#: every iteration is at least one pass over the data.
MAX_PASS_ITERATIONS = 100_000
#: Bootstrap samples of En-SVM-RFE: the rank sums settle within tens (Abeel et al. 2010 use 40).
MAX_ENSEMBLE = 10_000
#: Instances Lmba / Simba pick in total (iterations) or per step (batchSize): each pick is a
#: neighbour search over every row; the papers pick each pool instance about once.
MAX_PICKED_INSTANCES = 10_000_000
#: Rows per block of the distance / kernel computations: a task (a Python worker, whose memory
#: sparkfs does not know, so the cap is static) holds one blockSize^2 tile of doubles: 2 GiB at the
#: cap, 32 MiB at the default 2048. A block never holds more rows than its partition.
MAX_BLOCK_SIZE = 16_384
#: Clusters of Parzen-ISE's fuzzy c-means (default 3).
MAX_CLUSTERS = 10_000
#: Codes per feature of the information family's discretisation (bins): the counts of a step hold
#: p x bins^2 x classes cells at worst.
MAX_BINS = 256
#: Sample rows for the information family's cut points (they travel to the driver).
MAX_BIN_SAMPLE = 10_000_000
