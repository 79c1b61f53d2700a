from forge.ids import MAX_ID


def test_the_largest_id_is_that_of_a_64_bit_signed_integer():
    assert MAX_ID == 9_223_372_036_854_775_807
    assert MAX_ID.bit_length() == 63
