/*
 * _confine: the few process controls the agent-code sandbox needs, without ctypes.
 *
 * With ctypes loaded in the zygote, agent code could reach it (through the class graph)
 * and write to any address, switching the audit hook off. This module offers only calls
 * that take privileges away: no_new_privs, dumpable off, a parent-death signal, and
 * installing a seccomp filter program (which can only ever add restrictions). Agent code
 * that finds it can do nothing with it that the sandbox did not already do.
 *
 * Built by scripts/setup.d/60-pysandbox.sh with the system compiler.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

static PyObject *fail(const char *what)
{
    return PyErr_SetFromErrnoWithFilename(PyExc_OSError, what);
}

static PyObject *no_new_privs(PyObject *self, PyObject *unused)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return fail("prctl(PR_SET_NO_NEW_PRIVS)");
    Py_RETURN_NONE;
}

static PyObject *not_dumpable(PyObject *self, PyObject *unused)
{
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return fail("prctl(PR_SET_DUMPABLE)");
    Py_RETURN_NONE;
}

static PyObject *parent_death_signal(PyObject *self, PyObject *arg)
{
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred())
        return NULL;
    if (sig < 1 || sig > 64) {
        PyErr_SetString(PyExc_ValueError, "not a signal number");
        return NULL;
    }
    if (prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0)
        return fail("prctl(PR_SET_PDEATHSIG)");
    Py_RETURN_NONE;
}

/* install_filter(program: bytes): the program is an array of struct sock_filter. */
static PyObject *install_filter(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    struct sock_fprog prog;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0)
        return NULL;
    if (view.len == 0 || view.len % sizeof(struct sock_filter) != 0 ||
        view.len / sizeof(struct sock_filter) > BPF_MAXINSNS) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "not a seccomp filter program");
        return NULL;
    }
    prog.len = (unsigned short)(view.len / sizeof(struct sock_filter));
    prog.filter = (struct sock_filter *)view.buf;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
        PyBuffer_Release(&view);
        return fail("prctl(PR_SET_SECCOMP)");
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"no_new_privs", no_new_privs, METH_NOARGS, "prctl(PR_SET_NO_NEW_PRIVS, 1)"},
    {"not_dumpable", not_dumpable, METH_NOARGS, "prctl(PR_SET_DUMPABLE, 0)"},
    {"parent_death_signal", parent_death_signal, METH_O, "prctl(PR_SET_PDEATHSIG, sig)"},
    {"install_filter", install_filter, METH_O,
     "no_new_privs, then install a seccomp filter (bytes of struct sock_filter)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_confine",
    "Process controls that only take privileges away (see _confine.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__confine(void)
{
    return PyModule_Create(&module);
}
