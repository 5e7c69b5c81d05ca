import AbsorbExercises.Degree
import AbsorbExercises.IndexSet

/-!
# Exercises for the course (not part of the library)

Each exercise states a result with `sorry` for the student to replace by a proof. This library is
not a default target: `lake build` checks only `Absorb`, and `absorb audit` lists the `sorry`s
here as exercises, never as findings of the library. Build it with `lake build AbsorbExercises`.
Worked solutions are in `docs/course/solutions/lean.md`.
-/
