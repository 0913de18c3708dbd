"""Linear-attention recurrences in naive (token by token) and chunked forms: KDA, DPLR, Lightning
Attention-2, HGRN2. Ground truths for the equivalence experiments."""
