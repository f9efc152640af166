"""The tqdm bar "Generation n/N" with the best score so far and the generation that found it."""

from __future__ import annotations

from .utils.validation import Score


class Progress:
    def __init__(self, generations: int, disable: bool, k: int, problem_type: str):
        self.k = k
        self.sign = -1.0 if problem_type == "max" else 1.0
        self.best: float | None = None
        self.best_gen: int | None = None
        self.valid = 0
        self.bar = None
        if not disable:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=generations, desc="Generation", unit="gen", dynamic_ncols=True,
                            bar_format="{desc} {n_fmt}/{total_fmt} |{bar}| {elapsed}<{remaining}{postfix}")

    def update(self, generation: int, batch: list[Score]) -> None:
        for s in batch:
            if s.invalid or s.is_baseline:
                continue
            self.valid += 1
            if self.k == 1:
                v = s.norm_score if s.norm_score is not None and not isinstance(s.norm_score, str) else s.score
                if self.best is None or self.sign * v < self.sign * self.best:
                    self.best, self.best_gen = v, generation - 1
        if self.bar is None:
            return
        if self.k == 1 and self.best is not None:
            self.bar.set_postfix_str(f"best {self.best:.6g} (generation {self.best_gen})", refresh=False)
        elif self.k > 1:
            self.bar.set_postfix_str(f"{self.valid} valid", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
