"""Measures of a screen: a region's perceptual hashes, its tone, the element under a point,
the places an action changed away from it, the whole screen's thumbnail. Pixels in, compact
values (hex, tiles) out, and the distance between two of them; nothing here knows a message or
a file.
"""
