def long_game(cycles: int, size: int = 19) -> bytes:
    """A legal game of ``cycles`` x (size*size - 1) x 2 moves: Black fills the board while White passes, then
    White captures everything by playing the last empty point; the next cycle starts around that stone."""
    n = size * size
    name = [bytes([97 + i % size, 97 + i // size]) for i in range(n)]
    moves = []
    prev = None
    for k in range(cycles):
        cap = (2 * k) % n
        order = [p for p in range(n) if p != cap and p != prev] + ([prev] if prev is not None else [])
        for p in order:
            moves.append(b";B[" + name[p] + b"];W[]")
        moves.append(b";B[];W[" + name[cap] + b"]")
        prev = cap
    return b"(;GM[1]FF[4]SZ[19]RU[Japanese]KM[6.5]RE[B+R]" + b"".join(moves) + b")"
