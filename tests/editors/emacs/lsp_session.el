;;; lsp_session.el --- lsp-mode drives steerlsp in batch Emacs  -*- lexical-binding: t; -*-

;; Run by tests/editors/test_emacs.py when lsp-mode is installed (Debian's elpa-lsp-mode
;; is 8.0: no inline completion, so this checks the registration and the
;; ChatLSP commands through `lsp-send-execute-command').  Same environment as
;; session.el.

;;; Code:

(require 'json)

(defvar session-facts nil "What the session saw, written as JSON at the end.")
(defvar session-root (file-name-as-directory (getenv "STEERLSP_ROOT")))

(defun session-fact (key value)
  "Record VALUE under KEY."
  (push (cons key value) session-facts))

(defun session-run ()
  "Register steerlsp with lsp-mode, open a file, run two commands."
  (setq lsp-session-file (expand-file-name ".lsp-session" session-root)
        lsp-auto-guess-root t
        lsp-enable-file-watchers nil
        lsp-enable-snippet nil
        lsp-modeline-workspace-status-enable nil
        lsp-restart 'ignore)
  (require 'lsp-mode)
  (load (getenv "STEERLSP_EL") nil t)
  (setq steerlsp-command (append (json-read-from-string (getenv "STEERLSP_CMD")) nil))
  (setq steerlsp-settings '(:completion (:maxNewTokens 24)))
  (steerlsp-lsp-mode-setup)
  (session-fact 'registered (and (gethash 'steerlsp lsp-clients) t))
  (session-fact 'inline_library (and (featurep 'lsp-inline-completion) t))
  (add-hook 'project-find-functions (lambda (_dir) (cons 'transient session-root)))
  (lsp-workspace-folders-add session-root)
  (find-file (expand-file-name "shop/cart.py" session-root))
  (lsp)
  (let ((deadline (+ (float-time) 120)))
    (while (and (not (and (lsp-workspaces)
                          (eq (lsp--workspace-status (car (lsp-workspaces))) 'initialized)))
                (< (float-time) deadline))
      (accept-process-output nil 0.1)))
  (session-fact 'server (and (lsp-workspaces)
                             (symbol-name (lsp--client-server-id
                                           (lsp--workspace-client (car (lsp-workspaces)))))))
  (goto-char (point-min))
  (search-forward "discount(self.total(), percent)")
  (goto-char (match-beginning 0))
  (steerlsp-expected-type)
  (session-fact 'expected_type (with-current-buffer steerlsp-help-buffer (buffer-string)))
  (session-fact 'state (steerlsp-model-state)))

(condition-case failure
    (session-run)
  (error (session-fact 'error (error-message-string failure))))
(with-temp-file (getenv "STEERLSP_OUT")
  (insert (json-encode session-facts)))
(kill-emacs 0)

;;; lsp_session.el ends here
