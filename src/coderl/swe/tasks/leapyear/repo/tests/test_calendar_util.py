from calendar_util import days_in_year, is_leap


def test_every_fourth_year():
    assert is_leap(2024) and not is_leap(2023)


def test_centuries_are_not_leap():
    assert not is_leap(1900) and not is_leap(2100)


def test_days_in_year():
    assert days_in_year(2023) == 365 and days_in_year(2024) == 366


def test_every_fourth_century_is_leap():
    assert is_leap(2000) and is_leap(1600)
