"""Private helpers of FairDen: input coding, Goodall1 similarity, affinity operators, solvers."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh

from fairaudit.cluster.dc_distance import MergeTree

logger = logging.getLogger(__name__)


def encode_columns(values: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Integer codes per column of a 2-D array of arbitrary (hashable) values.

    Returns (codes (n, c) int64, list of the unique values per column)."""
    n, c = values.shape
    codes = np.empty((n, c), dtype=np.int64)
    uniques: list[np.ndarray] = []
    for j in range(c):
        col = values[:, j]
        try:
            u, inv = np.unique(col, return_inverse=True)
        except TypeError:
            u, inv = np.unique(col.astype(str), return_inverse=True)
        codes[:, j] = inv.reshape(-1)
        uniques.append(u)
    return codes, uniques


def goodall_weights(codes: np.ndarray) -> list[np.ndarray]:
    """Per column, per category c: ``1 − Σ_{q: p(q) <= p(c)} p(q)²`` (Goodall1, Boriah et al.)."""
    n = codes.shape[0]
    out = []
    for j in range(codes.shape[1]):
        p = np.bincount(codes[:, j]) / n
        ps = np.sort(p)
        cum = np.cumsum(ps**2)
        pos = np.searchsorted(ps, p, side="right") - 1
        out.append(1.0 - cum[pos])
    return out


@dataclass(frozen=True)
class GoodallOperator:
    """Goodall1 similarity S_G = (1/d_c)·G·diag(s)·Gᵀ (G = stacked one-hot columns)."""

    G: sp.csr_matrix
    s: np.ndarray
    diag: np.ndarray
    d_c: int

    @classmethod
    def from_codes(cls, codes: np.ndarray) -> GoodallOperator:
        n, dc = codes.shape
        weights = goodall_weights(codes)
        offsets = np.cumsum([0] + [w.size for w in weights])
        cols = (codes + offsets[:-1][None, :]).ravel()
        rows = np.repeat(np.arange(n), dc)
        G = sp.csr_matrix((np.ones(n * dc), (rows, cols)), shape=(n, int(offsets[-1])))
        s = np.concatenate(weights)
        diag = np.zeros(n)
        for j in range(dc):
            diag += weights[j][codes[:, j]]
        return cls(G=G, s=s, diag=diag / dc, d_c=dc)

    def matmul(self, V: np.ndarray) -> np.ndarray:
        """``S_G @ V`` in O(n·d_c·b) (diagonal included)."""
        T = self.G.T @ V
        T = self.s[:, None] * T if T.ndim == 2 else self.s * T
        return (self.G @ T) / self.d_c

    def dense(self) -> np.ndarray:
        Gd = self.G.toarray()
        return (Gd * self.s[None, :]) @ Gd.T / self.d_c


@dataclass(frozen=True)
class AffinityOperator:
    """A = w_n·(11ᵀ − I − D_dc/max) + w_c·(S_G − diag(S_G)): zero diagonal, never formed."""

    tree: MergeTree
    goodall: GoodallOperator | None
    w_num: float
    w_cat: float

    @property
    def n(self) -> int:
        return self.tree.n

    def matmul(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        M = self.tree.max_height
        out = self.w_num * (V.sum(axis=0, keepdims=V.ndim == 2) - V - self.tree.dc_matmul(V) / M)
        if self.goodall is not None and self.w_cat > 0:
            gd = self.goodall.diag[:, None] * V if V.ndim == 2 else self.goodall.diag * V
            out = out + self.w_cat * (self.goodall.matmul(V) - gd)
        return out

    def dense(self) -> np.ndarray:
        A = self.w_num * (1.0 - self.tree.dc_matrix() / self.tree.max_height)
        if self.goodall is not None and self.w_cat > 0:
            A += self.w_cat * self.goodall.dense()
        np.fill_diagonal(A, 0.0)
        return A


DEGREE_FLOOR = 1e-9


def floored_degrees(deg: np.ndarray) -> np.ndarray:
    """Degrees with a floor of ``DEGREE_FLOOR·mean``: a point whose dc-distance to every other
    point is the maximum (it joins the tree at the root alone) has affinity 0 to all and degree 0,
    which makes the pencil (L, D) singular. With the floor it decouples (eigenvalue 1) instead."""
    return np.maximum(deg, DEGREE_FLOOR * float(np.mean(deg)))


def fairness_matrix(group_codes: np.ndarray, n_groups: int) -> np.ndarray:
    """F (n × (g − 1)): columns 1[g = s] − |s|/n for all but the last group."""
    n = group_codes.size
    if n_groups < 2:
        return np.zeros((n, 0))
    onehot = np.zeros((n, n_groups - 1))
    mask = group_codes < n_groups - 1
    onehot[np.flatnonzero(mask), group_codes[mask]] = 1.0
    return onehot - onehot.mean(axis=0, keepdims=True)


def dense_bytes_needed(n: int) -> int:
    """Peak bytes of the dense solver: about six n×n float64 arrays (A/L, Z, ZᵀLZ, ZᵀDZ,
    eigh workspace, temporaries)."""
    return int(6 * 8 * n * n)


class DenseSolver:
    """The paper's algorithm on explicit matrices (the oracle).

    Z = orthonormal basis of null(Fᵀ) (complete QR of F); k smallest eigenpairs of the
    generalised problem (ZᵀLZ, ZᵀDZ) (equivalent to the paper's Q = sqrt(ZᵀDZ) route); H = Z·Y.
    No cap on the number of eigenvectors.
    """

    def __init__(self, op: AffinityOperator, F: np.ndarray) -> None:
        A = op.dense()
        deg = floored_degrees(A.sum(axis=1))
        L = np.diag(deg) - A
        del A
        r = F.shape[1]
        if r:
            Q, R = np.linalg.qr(F, mode="complete")
            rank = int(np.sum(np.abs(np.diag(R)) > 1e-10 * max(1.0, np.abs(R).max())))
            Z = Q[:, rank:]
        else:
            Z = np.eye(L.shape[0])
        self.Z = Z
        self.Lz = Z.T @ L @ Z
        del L
        self.Dz = (Z.T * deg[None, :]) @ Z
        self.Lz = (self.Lz + self.Lz.T) / 2
        self.Dz = (self.Dz + self.Dz.T) / 2
        self.degrees = deg

    def solve(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        m = min(m, self.Lz.shape[0])
        w, Y = scipy.linalg.eigh(self.Lz, self.Dz, subset_by_index=[0, m - 1])
        return w, self.Z @ Y


class MatrixFreeSolver:
    """Matrix-free solver: the symmetric projected operator.

    With u = D^{1/2}h the problem min tr(HᵀLH), HᵀDH = I, FᵀH = 0 becomes: the k largest
    eigenpairs of N = P·D^{-1/2}·A·D^{-1/2}·P, P = orthogonal projector onto the complement of
    G = D^{-1/2}F (eigenvalue λ_L = 1 − μ_N), then H = D^{-1/2}U (so HᵀDH = I exactly as in the
    dense solver). Lanczos (ARPACK ``eigsh``, seeded start vector) needs only O(n)-cost products
    with the affinity operator; nothing n×n is formed.
    """

    def __init__(
        self,
        op: AffinityOperator,
        F: np.ndarray,
        *,
        tol: float,
        max_iter: int,
        rng: np.random.Generator,
    ) -> None:
        self.op = op
        n = op.n
        deg = floored_degrees(op.matmul(np.ones(n)))
        self.degrees = deg
        self.dis = 1.0 / np.sqrt(deg)
        if F.shape[1]:
            Qg, _ = np.linalg.qr(self.dis[:, None] * F)
            self.Qg = Qg
        else:
            self.Qg = np.zeros((n, 0))
        self.tol = tol
        self.max_iter = max_iter
        self.rng = rng
        self.n_matvec_ = 0

    def _proj(self, V: np.ndarray) -> np.ndarray:
        if self.Qg.shape[1] == 0:
            return V
        return V - self.Qg @ (self.Qg.T @ V)

    def solve(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.op.n
        dis = self.dis

        def mv(V: np.ndarray) -> np.ndarray:
            V = V.reshape(n, -1)
            self.n_matvec_ += V.shape[1]
            W = self._proj(V)
            W = dis[:, None] * self.op.matmul(dis[:, None] * W)
            return self._proj(W)

        Nop = LinearOperator((n, n), matvec=mv, matmat=mv, dtype=np.float64)
        v0 = self._proj(self.rng.standard_normal(n))
        ncv = min(n - 1, max(2 * m + 1, 24))
        mu, U = eigsh(Nop, k=m, which="LA", v0=v0, ncv=ncv, tol=self.tol, maxiter=self.max_iter * n)
        order = np.argsort(-mu)
        mu = mu[order]
        U = U[:, order]
        return 1.0 - mu, dis[:, None] * U
