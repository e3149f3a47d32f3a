"""The narrowing of a typed call's failure to its relations (Note [relation of a typed failure])."""
from __future__ import annotations

from gnnbench.check.typed_failure import MOST_RUNS, index_text, relation_text, relations_at_fault


def _counted(wrong_when):
    runs = []

    def still_wrong(subset):
        runs.append(tuple(subset))
        return wrong_when(set(subset))

    return still_wrong, runs


def test_one_wrong_relation_among_many_is_found_in_about_two_log_r_runs():
    still_wrong, runs = _counted(lambda s: 89 in s)
    assert relations_at_fault(range(90), still_wrong) == [89]
    assert len(runs) <= 2 * 7


def test_several_wrong_relations_are_each_named_and_a_single_candidate_costs_no_run():
    still_wrong, _ = _counted(lambda s: bool(s & {2, 5}))
    assert relations_at_fault([5, 0, 1, 2, 3, 4, 6], still_wrong) == [2, 5]
    still_wrong, runs = _counted(lambda s: True)
    assert relations_at_fault([4], still_wrong) == [4] and runs == []


def test_a_fault_that_needs_two_relations_together_names_the_pair_and_none_alone_names_nothing():
    still_wrong, _ = _counted(lambda s: {1, 2} <= s)
    assert relations_at_fault([0, 1, 2, 3], still_wrong) == []          # the halves {0, 1} and {2, 3}: neither
    assert relations_at_fault([1, 2, 7, 8], still_wrong) == [1, 2]      # {1, 2} is wrong, neither of its halves
    still_wrong, _ = _counted(lambda s: False)
    assert relations_at_fault(range(8), still_wrong) == []


def test_the_runs_are_bounded():
    still_wrong, runs = _counted(lambda s: True)   # every subset wrong: each relation is named until the bound
    relations_at_fault(range(1000), still_wrong)
    assert len(runs) == MOST_RUNS


def test_the_texts_are_verifys():
    assert index_text("etype", [6], "R", 7) == "; every wrong element involves etype = 6 (of R=7)"
    assert index_text("etype", list(range(7)), "R", 64) == \
        "; every wrong element involves etype = 0, 1, 2, 3, 4, ... (of R=64)"
    assert relation_text(["fos-rev_topic->paper"]) == "relation fos-rev_topic->paper"
    assert relation_text(["a-r->b", "c-s->d"]) == "relations a-r->b, c-s->d"
