import Absorb.Basic
import Absorb.Activations
