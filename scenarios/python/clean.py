"""A clean DDP run: 8 steps, loss all-reduced, process group destroyed.
Rank 0 prints the final loss and a digest of the trained parameters to the
last bit, so runs with and without faultline's shim can be compared."""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402


def main():
    rank, world = ddp.setup()
    try:
        model, loader, opt = ddp.make_model_and_data(rank, world)
        for step, (xb, yb) in enumerate(loader):
            if step == 8:
                break
            loss = ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
        if rank == 0:
            digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters()))
            print(f"final loss {loss.item()!r} params {digest.hexdigest()[:16]}")
    finally:
        ddp.cleanup()


if __name__ == "__main__":
    main()
