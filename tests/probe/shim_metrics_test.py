"""The shim's metric sinks (_metrics), without torch: a value's provenance
(a tensor a collective wrote, a scalar .item() took out of one, the reducing
collectives since the name's last value), the metric_log event, and the
sinks' wrappers on stand-in classes (Accelerator.log, SummaryWriter,
torchmetrics' compute wrapper).

Run: python3 tests/probe/shim_metrics_test.py (ctest: shim_metrics)."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "probe", "python"))

from faultline_shim import _metrics, _state  # noqa: E402


class FakeTensor:
    """What _metrics reads of a torch.Tensor: numel, detach, item, __float__."""

    def __init__(self, v, n=1):
        self.v, self.n = v, n

    def numel(self):
        return self.n

    def detach(self):
        return self

    def item(self):
        return self.v

    def __float__(self):
        return float(self.v)


class Recorder:
    """_events.Recorder's emit_json, read back as the harness reads it."""

    def __init__(self):
        self.events = []

    def emit_json(self, ev, fields):
        self.events.append(dict(json.loads("{" + fields[1:] + "}"), ev=ev))


def fresh():
    _metrics._recent.clear()
    _metrics._counts.clear()
    _metrics._last_reducing.clear()
    _metrics._reducing = 0
    rec = _state.recorder = Recorder()
    return rec


class Provenance(unittest.TestCase):
    def setUp(self):
        self.rec = fresh()
        _metrics.patch_tensor(type("torch", (), {"Tensor": FakeTensor}))

    def tearDown(self):
        _state.recorder = None

    def test_a_tensor_a_collective_wrote_is_marked(self):
        t = FakeTensor(0.5)
        _metrics.after_collective("allreduce", t)
        _metrics._record("tensorboard", "val/acc", t)
        self.assertTrue(self.rec.events[-1]["collective"])

    def test_an_item_of_an_unmarked_tensor_with_no_collective_since(self):
        v = FakeTensor(0.625).item()
        _metrics._record("tensorboard", "val/acc", v, step=3)
        e = self.rec.events[-1]
        self.assertEqual((e["ev"], e["name"], e["n"], e["value"], e["step"], e["collective"]),
                         ("metric_log", "val/acc", 1, 0.625, 3, False))

    def test_the_last_data_pass_says_whose_data(self):
        _metrics.last_pass_sharded = None
        _metrics._record("tensorboard", "val/acc", FakeTensor(0.5).item())
        self.assertNotIn("shard", self.rec.events[-1])
        for sharded in (True, False):
            _metrics.last_pass_sharded = sharded
            _metrics._record("tensorboard", "val/acc", FakeTensor(0.5).item())
            self.assertIs(self.rec.events[-1]["shard"], sharded)
        _metrics.last_pass_sharded = None

    def test_a_reducing_collective_since_makes_it_unknown(self):
        correct = FakeTensor(5.0)
        _metrics.after_collective("allreduce", correct)
        v = FakeTensor(0.75).item()  # derived after the all-reduce: (correct / total).item()
        _metrics._record("tensorboard", "val/acc", v)
        self.assertNotIn("collective", self.rec.events[-1])
        # The next value of the name, with no collective since: known again.
        _metrics._record("tensorboard", "val/acc", FakeTensor(0.5).item())
        self.assertFalse(self.rec.events[-1]["collective"])
        self.assertEqual(self.rec.events[-1]["n"], 2)

    def test_a_barrier_reduces_nothing(self):
        _metrics.after_collective("barrier", None)
        _metrics._record("tensorboard", "loss", FakeTensor(0.5).item())
        self.assertFalse(self.rec.events[-1]["collective"])

    def test_a_float_no_tensor_gave_is_unknown(self):
        _metrics._record("wandb", "lr", 0.01)
        self.assertNotIn("collective", self.rec.events[-1])

    def test_not_a_number_is_not_recorded(self):
        for v in ("text", None, float("nan"), float("inf"), FakeTensor(1.0, n=4), True):
            _metrics._record("wandb", "x", v)
        self.assertEqual(self.rec.events, [])

    def test_each_value_is_a_json_line_whatever_the_name(self):
        for i, name in enumerate(['val "acc"\n', "acc/\u00e9t\u00e9", "x" * 300]):
            _metrics._record("tensorboard", name, 1e-05 * (i + 1), step=i, sync=True, stage="validation")
            e = self.rec.events[-1]
            self.assertEqual((e["name"], e["value"], e["step"], e["sync"], e["stage"]),
                             (name[:200], 1e-05 * (i + 1), i, True, "validation"))

    def test_nothing_is_recorded_outside_a_rank(self):
        _state.recorder = None
        _metrics._record("wandb", "x", 1.0)
        self.assertEqual(self.rec.events, [])


class Sinks(unittest.TestCase):
    def setUp(self):
        self.rec = fresh()

    def tearDown(self):
        _state.recorder = None

    @staticmethod
    def accelerator(calls):
        class Accelerator:
            def log(self, values, step=None, log_kwargs=None):
                calls.append((values, step))

            def print(self, *args, **kwargs):
                calls.append(args)

            def gather_for_metrics(self, x):
                return x

            def gather(self, x):
                return x

            def reduce(self, x, reduction="sum"):
                return x

        _metrics.patch_accelerate(type("m", (), {"Accelerator": Accelerator}))
        return Accelerator

    def test_accelerate_log_records_every_rank_and_gathers_mark(self):
        calls = []
        Accelerator = self.accelerator(calls)
        a = Accelerator()
        gathered = a.gather_for_metrics(FakeTensor(0.8))
        a.log({"val_acc": gathered, "note": "text"}, step=2)
        self.assertEqual(calls, [({"val_acc": gathered, "note": "text"}, 2)])
        (e,) = self.rec.events
        self.assertEqual((e["sink"], e["name"], e["step"], e["collective"]), ("accelerate", "val_acc", 2, True))
        self.assertIn("shim_metrics_test.py", e["site"])
        # Patched once, whatever imports it again.
        _metrics.patch_accelerate(type("m", (), {"Accelerator": Accelerator}))
        self.assertFalse(hasattr(Accelerator.log.__faultline_wrapped__, "__faultline_wrapped__"))

    def test_accelerate_print_records_the_numbers_a_tensor_gave(self):
        calls = []
        Accelerator = self.accelerator(calls)
        _metrics.patch_tensor(type("torch", (), {"Tensor": FakeTensor}))
        v = FakeTensor(0.53125).item()
        Accelerator().print("epoch %d: val_acc %.4f took %.2fs" % (3, v, 1.234))
        self.assertEqual(len(calls), 1)
        (e,) = self.rec.events  # not the epoch, not the time: no tensor gave them
        self.assertEqual((e["sink"], e["name"], e["value"], e["collective"]),
                         ("accelerate.print", "val_acc", 0.53125, False))

    def test_summary_writer_add_scalar_and_add_scalars(self):
        written = []

        class SummaryWriter:
            def add_scalar(self, tag, scalar_value, global_step=None, walltime=None):
                written.append((tag, scalar_value, global_step))

            def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
                written.append((main_tag, tag_scalar_dict, global_step))

        _metrics.patch_tensorboard(type("m", (), {"SummaryWriter": SummaryWriter}))
        w = SummaryWriter()
        w.add_scalar("loss", 0.25, 7)
        w.add_scalars("acc", {"train": 0.5, "val": 0.75}, 7)
        self.assertEqual(len(written), 2)
        self.assertEqual([(e["name"], e["value"], e["step"]) for e in self.rec.events],
                         [("loss", 0.25, 7), ("acc/train", 0.5, 7), ("acc/val", 0.75, 7)])

    def test_torchmetrics_compute_is_named_by_class_and_instance(self):
        class Metric:
            sync_on_compute = True

            def __init__(self):
                self.compute = self._wrap_compute(self.compute)

            def _wrap_compute(self, compute):
                return compute

        class MulticlassAccuracy(Metric):
            def compute(self):
                return FakeTensor(0.9)

        _metrics.patch_torchmetrics(type("m", (), {"Metric": Metric}))
        first, second = MulticlassAccuracy(), MulticlassAccuracy()
        second.sync_on_compute = False
        first.compute()
        second.compute()
        self.assertEqual([(e["name"], e["sync"]) for e in self.rec.events],
                         [("MulticlassAccuracy", True), ("MulticlassAccuracy#2", False)])


if __name__ == "__main__":
    unittest.main()
