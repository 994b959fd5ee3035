"""Summary statistics."""


def mean(data):
    values = list(data)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(data):
    """The middle value of data (the mean of the two middle values for an even count)."""
    values = list(data)
    if not values:
        raise ValueError("median of no values")
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2
