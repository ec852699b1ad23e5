plain_bytes = 0
fused_bytes = 0
