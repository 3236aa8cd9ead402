;;; session.el --- Eglot drives steerlsp in batch Emacs  -*- lexical-binding: t; -*-

;; Run by tests/editors/test_emacs.py:
;;   emacs --batch -l tests/editors/emacs/session.el
;; with STEERLSP_EL (the shipped editor-configs/emacs/steerlsp.el), STEERLSP_CMD
;; (the server command as a JSON array), STEERLSP_ROOT (a copy of
;; the example project), STEERLSP_OUT (where the facts go, as JSON) and
;; STEERLSP_MODEL_TIMEOUT (seconds).  Everything goes through Eglot's own
;; connection; the completion items through Eglot's completion-at-point.

;;; Code:

(require 'json)
(require 'eglot)
(require 'project)

(load (getenv "STEERLSP_EL") nil t)

(defvar session-facts nil "What the session saw, written as JSON at the end.")
(defvar session-root (file-name-as-directory (getenv "STEERLSP_ROOT")))
(defvar session-started (float-time))

(defun session-fact (key value)
  "Record VALUE under KEY."
  (push (cons key value) session-facts))

(defun session-wait (predicate seconds what)
  "Process output until PREDICATE is non-nil, for at most SECONDS; WHAT for the error."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (or (funcall predicate) (error "Timed out after %ss waiting for %s" seconds what))))

(defun session-goto (needle)
  "Put point at the start of NEEDLE's first occurrence."
  (goto-char (point-min))
  (search-forward needle)
  (goto-char (match-beginning 0)))

(defun session-help-text ()
  "The text of steerlsp's help buffer."
  (with-current-buffer steerlsp-help-buffer (buffer-substring-no-properties (point-min) (point-max))))

(defun session-completions ()
  "The completion strings Eglot's completion-at-point offers at point."
  (eglot--signal-textDocument/didChange)
  (let ((capf (eglot-completion-at-point)))
    (and capf (all-completions "" (nth 2 capf)))))

(defun session-run ()
  "The session: connect, hover, ChatLSP, status, then the AI item once the model is ready."
  (setq steerlsp-command (append (json-read-from-string (getenv "STEERLSP_CMD")) nil))
  (setq steerlsp-settings '(:completion (:maxNewTokens 24)))
  (steerlsp-eglot-setup)
  (add-hook 'project-find-functions (lambda (_dir) (cons 'transient session-root)))
  (find-file (expand-file-name "shop/cart.py" session-root))
  (session-fact 'major_mode (symbol-name major-mode))
  (apply #'eglot (eglot--guess-contact))
  (session-wait #'eglot-current-server 120 "Eglot to connect")
  (let* ((server (eglot-current-server))
         (capabilities (eglot--capabilities server)))
    (session-fact 'emacs emacs-version)
    (session-fact 'server (plist-get (eglot--server-info server) :name))
    ;; `{}' reads as nil: ask whether the key is there.
    (session-fact 'inline_provider (and (plist-member capabilities :inlineCompletionProvider) t))
    (session-fact 'chatlsp (plist-get (plist-get (plist-get capabilities :experimental) :chatlsp) :methods))

    ;; Hover on `discount` (pylsp's answer, through steerlsp).
    (session-goto "discount(self.total(), percent)")
    (let ((hover (jsonrpc-request server :textDocument/hover (eglot--TextDocumentPositionParams))))
      (session-fact 'hover (format "%S" (plist-get hover :contents))))

    ;; ChatLSP through the shipped commands (workspace/executeCommand).
    (steerlsp-expected-type)
    (session-fact 'expected_type (session-help-text))
    (steerlsp-relevant-types)
    (session-fact 'relevant_types (session-help-text))
    (steerlsp-error-report "discount(self.totl(), percent)")
    (session-fact 'error_report (session-help-text))
    (session-fact 'first_state (steerlsp-status))

    ;; The model, then a new function whose body starts at `cart.`.
    (session-wait (lambda () (member (steerlsp-model-state) '("ready" "failed" "disabled")))
                  (string-to-number (or (getenv "STEERLSP_MODEL_TIMEOUT") "600")) "the model")
    (session-fact 'model_state (steerlsp-model-state))
    (session-fact 'ready_after_s (- (float-time) session-started))
    (goto-char (point-max))
    (insert "\n\ndef grand_total(cart: Cart) -> Price:\n    return cart.")
    ;; Like an editor: ask again (a keystroke, an idle timer) until the AI item is there.
    (let ((deadline (+ (float-time) 120)) (tries 0) items ai)
      (while (and (not ai) (< (float-time) deadline))
        (setq tries (1+ tries))
        (setq items (session-completions))
        (setq ai (seq-find (lambda (item) (string-prefix-p "✨" item)) items))
        (unless ai (accept-process-output nil 1)))
      (session-fact 'tries tries)
      (session-fact 'items (vconcat (seq-take items 40)))
      (session-fact 'ai_item ai))
    (steerlsp-explain)
    (session-fact 'explain (session-help-text))
    (eglot-shutdown server)))

(condition-case failure
    (session-run)
  (error (session-fact 'error (error-message-string failure))))
(session-fact 'seconds (- (float-time) session-started))
(with-temp-file (getenv "STEERLSP_OUT")
  (insert (json-encode session-facts)))
(kill-emacs 0)

;;; session.el ends here
